"""A 2-layer batch-first LSTM: solar.for over time, one cell kernel per step."""
import torch

B, T, IN, HID = 3, 5, 6, 8


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = torch.nn.LSTM(IN, HID, num_layers=2, batch_first=True)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return y, h, c


def get_inputs():
    return [torch.randn(B, T, IN)]


def get_init_inputs():
    return []


# Per step and layer: gate matmuls (4·HID rows over IN or HID, and HID) are contractions; the biases add
# (2 per gate element) and the cell update costs 10 per state element (3 sigmoids, 2 tanh, 3 mul, 1 add...
# see recurrent.py).
EXPECT = {"tensor": T * 2 * B * 4 * HID * (IN + HID) + T * 2 * B * 4 * HID * (HID + HID)}
