"""BLOOM's ALiBi slopes: powers over an int32 arange."""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        powers = torch.arange(1, 5, dtype=torch.int32)
        return x * torch.pow(0.5, powers)


def get_inputs():
    return [torch.randn(3, 4)]


def get_init_inputs():
    return []
