"""A sum over the middle dim of a 128 x 4096 x 4095 tensor, keeping it."""
import torch

batch_size, dim1, dim2, reduce_dim = 128, 4096, 4095, 1


class Model(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim, keepdim=True)


def get_inputs():
    return [torch.rand(batch_size, dim1, dim2)]


def get_init_inputs():
    return [reduce_dim]
