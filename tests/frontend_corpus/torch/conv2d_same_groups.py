"""Conv2d with padding='same', groups=2 and an asymmetric 3x5 kernel; a strided unpadded Conv2d."""
import torch

N, CIN, COUT, H, W = 2, 4, 6, 11, 9


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Conv2d(CIN, COUT, (3, 5), padding="same", groups=2)
        self.b = torch.nn.Conv2d(COUT, 4, 2, stride=2, bias=False)

    def forward(self, x):
        return self.b(self.a(x))


def get_inputs():
    return [torch.randn(N, CIN, H, W)]


def get_init_inputs():
    return []


def taps(size: int, k: int, pad: int) -> int:
    return sum(1 for p in range(size) for r in range(k) if 0 <= p + r - pad < size)


# Unpadded, in-bounds convolutions count exactly what FlopCounterMode counts.
EXPECT = {"tensor": 2 * N * COUT * (CIN // 2) * taps(H, 3, 1) * taps(W, 5, 2) + 2 * N * 4 * COUT * 5 * 4 * 4,
          "vector": N * COUT * H * W}
