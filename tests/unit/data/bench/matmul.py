"""A matmul: C = A @ B."""
import torch

M, K, N = 64, 64, 64


class Model(torch.nn.Module):
    def forward(self, a, b):
        return a @ b


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
