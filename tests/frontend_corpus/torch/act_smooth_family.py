"""SiLU, Mish, Softplus (beta, threshold), Hardswish, Hardsigmoid, LogSigmoid, Softsign, GELU (exact)."""
import torch
import torch.nn.functional as F

B, D = 8, 12


class Model(torch.nn.Module):
    def forward(self, x):
        return (F.silu(x), F.mish(x), F.softplus(x, beta=2.0, threshold=5.0), F.hardswish(x), F.hardsigmoid(x),
                F.logsigmoid(x), F.softsign(x), F.gelu(x))


def get_inputs():
    return [torch.randn(B, D) * 4]


def get_init_inputs():
    return []


# silu 2; mish: x·tanh(select(x > 20, x, log1p(exp(x)))) 6; softplus(beta): 7; hardswish 5; hardsigmoid 4;
# logsigmoid 6; softsign 3; gelu 5.
EXPECT = {"vector": B * D * (2 + 6 + 7 + 5 + 4 + 6 + 3 + 5)}
