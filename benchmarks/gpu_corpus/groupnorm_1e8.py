"""GroupNorm, 32 groups of 512 channels, on 32 x 512 x 96 x 96 (1.5e8 elements)."""
import torch


class Model(torch.nn.Module):
    def __init__(self, groups, c):
        super().__init__()
        self.norm = torch.nn.GroupNorm(groups, c)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(32, 512, 96, 96)]


def get_init_inputs():
    return [32, 512]
