"""addmm and baddbmm with alpha and beta, addmv."""
import torch

M, K, N, BATCH = 8, 16, 12, 2


class Model(torch.nn.Module):
    def forward(self, c, a, b, cb, ab, bb, v, cv):
        return (torch.addmm(c, a, b, beta=0.5, alpha=2.0), torch.baddbmm(cb, ab, bb, beta=1.0, alpha=0.25),
                torch.addmv(cv, a, v))


def get_inputs():
    return [torch.randn(M, N), torch.randn(M, K), torch.randn(K, N), torch.randn(BATCH, M, N),
            torch.randn(BATCH, M, K), torch.randn(BATCH, K, N), torch.randn(K), torch.randn(M)]


def get_init_inputs():
    return []


# addmm: acc·alpha + bias·beta = 3 ops; baddbmm: acc·alpha + bias = 2 ops; addmv: bias add = 1 op.
EXPECT = {"tensor": 2 * (M * N * K + BATCH * M * N * K + M * K), "vector": 3 * M * N + 2 * BATCH * M * N + M}
