"""A suite LSTM that draws its initial state with torch.randn in forward."""
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(8, 16, batch_first=True)

    def forward(self, x):
        h0 = torch.randn(1, x.shape[0], 16)
        c0 = torch.randn(1, x.shape[0], 16)
        return self.lstm(x, (h0, c0))[0]


def get_inputs():
    return [torch.randn(2, 5, 8)]


def get_init_inputs():
    return []
