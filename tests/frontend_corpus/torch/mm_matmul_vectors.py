"""matmul's 1-D cases (dot, matrix-vector, vector-matrix), torch.mv, torch.dot and torch.outer."""
import torch

M, K = 12, 20


class Model(torch.nn.Module):
    def forward(self, a, v, u):
        return torch.matmul(v, v), torch.matmul(a, v), torch.matmul(u, a), torch.mv(a, v), torch.dot(v, v), \
            torch.outer(u, v)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K), torch.randn(M)]


def get_init_inputs():
    return []


# outer is a product with nothing reduced: vector work, one multiply per element.
EXPECT = {"tensor": 2 * (K + M * K + M * K + M * K + K), "vector": M * K}
