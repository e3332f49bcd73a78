"""torch.mm, torch.bmm and a broadcast torch.matmul."""
import torch

M, K, N, BATCH = 24, 40, 16, 3


class Model(torch.nn.Module):
    def forward(self, a, b, c, d, w):
        return torch.mm(a, b), torch.bmm(c, d), torch.matmul(c, w)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N), torch.randn(BATCH, M, K), torch.randn(BATCH, K, N),
            torch.randn(K, N)]


def get_init_inputs():
    return []


EXPECT = {"tensor": "counter", "vector": 0}
