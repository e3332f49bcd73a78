"""A batched matrix product: 128 products of (512 x 1024) @ (1024 x 2048)."""
import torch

batch_size, m, k, n = 128, 512, 1024, 2048


class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.bmm(a, b)


def get_inputs():
    return [torch.rand(batch_size, m, k), torch.rand(batch_size, k, n)]


def get_init_inputs():
    return []
