"""Conv1d with stride, padding and dilation (bias), then ReLU."""
import torch

N, CIN, COUT, L, K, STRIDE, PAD, DIL = 4, 6, 8, 33, 3, 2, 2, 2


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv1d(CIN, COUT, K, stride=STRIDE, padding=PAD, dilation=DIL)

    def forward(self, x):
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(N, CIN, L)]


def get_init_inputs():
    return []


LOUT = (L + 2 * PAD - DIL * (K - 1) - 1) // STRIDE + 1
# Taps inside the input: the guard leaves padded positions out of the iteration domain.
TAPS = sum(1 for p in range(LOUT) for r in range(K) if 0 <= p * STRIDE + r * DIL - PAD < L)
EXPECT = {"tensor": 2 * N * COUT * CIN * TAPS, "vector": 2 * N * COUT * LOUT}
