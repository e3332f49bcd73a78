"""Embedding → LSTM → linear on the last step → log_softmax (a text classifier)."""
import torch
import torch.nn as nn

B, T, V, E, HID, CLASSES = 3, 6, 50, 8, 12, 4


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(V, E)
        self.lstm = nn.LSTM(E, HID, batch_first=True)
        self.fc = nn.Linear(HID, CLASSES)

    def forward(self, ids):
        y, _ = self.lstm(self.emb(ids))
        return torch.log_softmax(self.fc(y[:, -1]), dim=-1)


def get_inputs():
    return [torch.randint(0, V, (B, T))]


def get_init_inputs():
    return []


EXPECT = {"tensor": T * 2 * B * 4 * HID * (E + HID) + 2 * B * CLASSES * HID}
