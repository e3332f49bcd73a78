"""BatchNorm2d (eval: running statistics) on 64 x 256 x 96 x 96 (1.5e8 elements)."""
import torch


class Model(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm = torch.nn.BatchNorm2d(c)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(64, 256, 96, 96)]


def get_init_inputs():
    return [256]
