"""C = A @ B with a long reduction: 1024 x 262144 by 262144 x 1024 (K = 2^18)."""
import torch


class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(1024, 262144), torch.randn(262144, 1024)]


def get_init_inputs():
    return []
