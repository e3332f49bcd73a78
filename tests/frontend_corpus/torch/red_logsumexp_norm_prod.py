"""logsumexp, 2-norm and 1-norm over a dim, prod over a dim and over everything."""
import torch

R, C = 4, 9


class Model(torch.nn.Module):
    def forward(self, x):
        return (torch.logsumexp(x, dim=1), torch.linalg.vector_norm(x, 2, dim=1), torch.norm(x, p=1, dim=1),
                torch.prod(x, dim=1), torch.prod(x))


def get_inputs():
    return [torch.randn(R, C)]


def get_init_inputs():
    return []


N = R * C
# logsumexp per row: max n, exp-sum 3n, log + add 2. 2-norm: x·x summed is a contraction (tensor-core
# FLOPs, 2n) and a sqrt per row. 1-norm: abs and add per element. prod: a multiply per element, twice.
EXPECT = {"tensor": 2 * N, "vector": R * (4 * C + 2) + R + 2 * N + 2 * N}
