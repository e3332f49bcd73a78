"""GELU (erf form) over 4096 rows of 393216."""
import torch

batch_size, dim = 4096, 393216


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.gelu(x)


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
