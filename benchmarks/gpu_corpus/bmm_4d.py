"""Batched 4-D matmul as attention scores use it: [16, 32, 2048, 128] @ [16, 32, 128, 2048]."""
import torch


class Model(torch.nn.Module):
    def forward(self, q, k):
        return torch.matmul(q, k)


def get_inputs():
    return [torch.randn(16, 32, 2048, 128), torch.randn(16, 32, 128, 2048)]


def get_init_inputs():
    return []
