"""Layer norm with affine parameters."""
import torch

rows, dim = 32, 128


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(dim)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(rows, dim)]


def get_init_inputs():
    return []
