"""A ResNet bottleneck block (1x1 -> 3x3 -> 1x1 convs with batch norms, a projection shortcut), 256 -> 1024
channels, on 32 x 256 x 56 x 56."""
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, cin, mid, cout):
        super().__init__()
        self.c1 = nn.Conv2d(cin, mid, 1, bias=False)
        self.b1 = nn.BatchNorm2d(mid)
        self.c2 = nn.Conv2d(mid, mid, 3, padding=1, bias=False)
        self.b2 = nn.BatchNorm2d(mid)
        self.c3 = nn.Conv2d(mid, cout, 1, bias=False)
        self.b3 = nn.BatchNorm2d(cout)
        self.proj = nn.Conv2d(cin, cout, 1, bias=False)
        self.bp = nn.BatchNorm2d(cout)

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = torch.relu(self.b2(self.c2(y)))
        y = self.b3(self.c3(y))
        return torch.relu(y + self.bp(self.proj(x)))


def get_inputs():
    return [torch.randn(32, 256, 56, 56)]


def get_init_inputs():
    return [256, 256, 1024]
