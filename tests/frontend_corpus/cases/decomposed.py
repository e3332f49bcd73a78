"""Ops without a lowering of their own that decompose into supported ones (logaddexp, addr, logit)."""
import torch


class Model(torch.nn.Module):
    def forward(self, x, u, v):
        return torch.logaddexp(x, x * 0.5), torch.addr(x, u, v, beta=0.5), torch.logit(torch.sigmoid(x), eps=1e-6)


def get_inputs():
    return [torch.randn(5, 6), torch.randn(5), torch.randn(6)]


def get_init_inputs():
    return []
