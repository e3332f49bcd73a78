"""Tanh, Sigmoid, Tanhshrink, Hardshrink, Softshrink, GLU, and exp/log-based math."""
import torch
import torch.nn.functional as F

B, D = 6, 16


class Model(torch.nn.Module):
    def forward(self, x):
        return (torch.tanh(x), torch.sigmoid(x), F.tanhshrink(x), F.hardshrink(x, 0.3), F.softshrink(x, 0.4),
                F.glu(x, dim=1), torch.exp(x) + torch.log1p(x.abs()) - torch.expm1(x * 0.1))


def get_inputs():
    return [torch.randn(B, D)]


def get_init_inputs():
    return []


# tanh 1, sigmoid 1, tanhshrink 2, hardshrink 3 (abs, compare, select), softshrink 6 (two compares, a
# subtract, an add, two selects), glu 2 per output (half the columns), then exp, abs, log1p, add, mul,
# expm1, sub as seven one-op kernels.
EXPECT = {"vector": B * D * (1 + 1 + 2 + 3 + 6 + 7) + 2 * B * (D // 2)}
