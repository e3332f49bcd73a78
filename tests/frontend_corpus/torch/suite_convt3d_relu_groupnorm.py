"""A suite problem: ConvTranspose3d → ReLU → GroupNorm, groups of 4 channels × 10³ positions here
(16 × 34³ ≈ 630k at the suite's size)."""
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.ConvTranspose3d(4, 8, 3)
        self.norm = nn.GroupNorm(2, 8)

    def forward(self, x):
        return self.norm(torch.relu(self.conv(x)))


def get_inputs():
    return [torch.randn(2, 4, 8, 8, 8)]


def get_init_inputs():
    return []


# The transposed convolution's scatter form counts every (input position, tap) pair: 2·B·Cin·Cout·8³·3³.
EXPECT = {"tensor": 2 * 2 * 4 * 8 * 8 ** 3 * 27}
