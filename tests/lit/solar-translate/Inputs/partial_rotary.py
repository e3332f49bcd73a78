"""Phi-3's partial rotary with factor 1.0: the pass-through part is an empty slice, joined back by `cat`."""
import torch


class Model(torch.nn.Module):
    def forward(self, q):
        rot, rest = q[..., :32], q[..., 32:]
        return torch.cat([rot * 2.0, rest], dim=-1)


def get_inputs():
    return [torch.randn(2, 4, 32)]


def get_init_inputs():
    return []
