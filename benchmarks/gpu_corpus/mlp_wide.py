"""A 16384-wide MLP block (2 GiB of f32 weights): two linear layers with a ReLU between, on 64 rows. Validation
builds its reference from scaled constructor arguments (frontends/scaled_reference.py)."""
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, width, hidden):
        super().__init__()
        self.up = nn.Linear(width, hidden)
        self.down = nn.Linear(hidden, width)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


def get_inputs():
    return [torch.randn(64, 16384)]


def get_init_inputs():
    return [16384, 16384]
