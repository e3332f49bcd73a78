"""LayerNorm over the last 1024 of a 16 x 8192 x 1024 input (1.3e8 elements)."""
import torch


class Model(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(16, 8192, 1024)]


def get_init_inputs():
    return [1024]
