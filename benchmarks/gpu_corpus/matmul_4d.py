"""A 4-D tensor times a matrix: 8 x 256 x 512 x 256 by 256 x 768 (einsum bijl,lk->bijk)."""
import torch


class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.einsum("bijl,lk->bijk", a, b)


def get_inputs():
    return [torch.randn(8, 256, 512, 256), torch.randn(256, 768)]


def get_init_inputs():
    return []
