"""A rectangular matrix product, (2048 x 8192) @ (8192 x 4096)."""
import torch

M, K, N = 2048, 8192, 4096


class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.rand(M, K), torch.rand(K, N)]


def get_init_inputs():
    return []
