"""A matrix-vector product, (2048 x 1048576) @ (1048576 x 1)."""
import torch

M, K = 2048, 1048576


class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.rand(M, K), torch.rand(K, 1)]


def get_init_inputs():
    return []
