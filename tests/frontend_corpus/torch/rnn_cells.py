"""LSTMCell and GRUCell applied once (no time loop: a single cell kernel each)."""
import torch

B, IN, HID = 4, 6, 5


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = torch.nn.LSTMCell(IN, HID)
        self.gru = torch.nn.GRUCell(IN, HID)

    def forward(self, x, h, c):
        h1, c1 = self.lstm(x, (h, c))
        return h1, c1, self.gru(x, h)


def get_inputs():
    return [torch.randn(B, IN), torch.randn(B, HID), torch.randn(B, HID)]


def get_init_inputs():
    return []


EXPECT = {"tensor": 2 * B * 4 * HID * (IN + HID) + 2 * B * 3 * HID * (IN + HID)}
