"""An argmax over the middle dim of a 128 x 4096 x 4095 tensor."""
import torch

batch_size, dim1, dim2 = 128, 4096, 4095


class Model(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.argmax(x, dim=self.dim)


def get_inputs():
    return [torch.rand(batch_size, dim1, dim2)]


def get_init_inputs():
    return [1]
