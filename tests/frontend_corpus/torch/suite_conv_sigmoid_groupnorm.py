"""A fused-chain problem of the public suite: conv → add → scale → sigmoid → GroupNorm. Its groups are long
sums (4 channels × 58² positions here; 16 × 254² at the suite's size), which the executor accumulates wide."""
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, cin: int, cout: int, k: int, groups: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k)
        self.bias = nn.Parameter(torch.randn(cout, 1, 1) * 0.02)
        self.scale = nn.Parameter(torch.randn(cout, 1, 1) * 0.02)
        self.norm = nn.GroupNorm(groups, cout)

    def forward(self, x):
        return self.norm(torch.sigmoid((self.conv(x) + self.bias) * self.scale))


def get_inputs():
    return [torch.randn(2, 3, 60, 60)]


def get_init_inputs():
    return [3, 8, 3, 2]


EXPECT = {"tensor": "counter"}  # an unpadded convolution: every tap is valid, as FlopCounterMode counts
