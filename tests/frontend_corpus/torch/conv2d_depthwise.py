"""Depthwise Conv2d (groups = channels) with padding 1, no bias, then a pointwise 1x1 Conv2d."""
import torch

N, C, H, W, COUT = 2, 8, 12, 10, 16


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.dw = torch.nn.Conv2d(C, C, 3, padding=1, groups=C, bias=False)
        self.pw = torch.nn.Conv2d(C, COUT, 1)

    def forward(self, x):
        return self.pw(self.dw(x))


def get_inputs():
    return [torch.randn(N, C, H, W)]


def get_init_inputs():
    return []


def taps(size: int, k: int = 3, pad: int = 1) -> int:
    return sum(1 for p in range(size) for r in range(k) if 0 <= p + r - pad < size)


EXPECT = {"tensor": 2 * N * C * taps(H) * taps(W) + 2 * N * COUT * C * H * W, "vector": N * COUT * H * W}
