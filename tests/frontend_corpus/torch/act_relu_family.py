"""ReLU6, Hardtanh, LeakyReLU, ELU, SELU, CELU, PReLU, RReLU (eval), Threshold."""
import torch

N, C, L = 4, 3, 10


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.prelu = torch.nn.PReLU(C)
        self.prelu.weight.data.uniform_(0, 0.5)

    def forward(self, x):
        F = torch.nn.functional
        return (F.relu6(x), F.hardtanh(x, -0.5, 0.7), F.leaky_relu(x, 0.2), F.elu(x, 1.5), F.selu(x),
                F.celu(x, 0.8), self.prelu(x), F.rrelu(x, training=False), F.threshold(x, 0.1, -3.0))


def get_inputs():
    return [torch.randn(N, C, L) * 3]


def get_init_inputs():
    return []


# Ops per element (a select counts as one): relu6 2 (max, min); hardtanh 2; leaky_relu 3 (compare, multiply,
# select); elu 4 (compare, expm1, multiply by alpha, select); selu 5; celu 6 (max, divide, expm1, multiply,
# min, add); prelu 3; rrelu 3; threshold 2 (compare, select).
EXPECT = {"vector": N * C * L * (2 + 2 + 3 + 4 + 5 + 6 + 3 + 3 + 2)}
