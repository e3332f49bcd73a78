"""Writes into slices of a fresh tensor (DeepSeek's expand_kv): `y = x.new_empty(...); y[..., :n].copy_(x)`."""

import torch


class M(torch.nn.Module):
    def forward(self, x, y):
        out = x.new_empty(*x.shape[:-1], 12)
        out[..., :8].copy_(x)
        out[..., 8:].copy_(y)
        return out


def get_inputs() -> list:
    return [torch.randn(2, 3, 5, 8), torch.randn(2, 3, 5, 4)]


def get_init_inputs() -> list:
    return []


Model = M
