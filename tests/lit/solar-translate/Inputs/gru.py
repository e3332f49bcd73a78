"""A bidirectional GRU over STEPS steps, sequence-first."""
import torch
from torch import nn

STEPS, BATCH, FEATURES, HIDDEN = 24, 6, 5, 8


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gru = nn.GRU(FEATURES, HIDDEN, bidirectional=True)

    def forward(self, x):
        return self.gru(x)[0]


def get_inputs():
    return [torch.randn(STEPS, BATCH, FEATURES)]


def get_init_inputs():
    return []
