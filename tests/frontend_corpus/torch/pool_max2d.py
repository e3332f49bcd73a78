"""MaxPool2d with padding and ceil_mode, and MaxPool2d(2) on the result."""
import torch

N, C, H, W = 2, 3, 11, 9


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)
        self.b = torch.nn.MaxPool2d(2)

    def forward(self, x):
        return self.b(self.a(x))


def get_inputs():
    return [torch.randn(N, C, H, W)]


def get_init_inputs():
    return []


def out_size(size: int) -> int:
    o = -(-(size + 2 - 3) // 2) + 1
    return o - 1 if (o - 1) * 2 >= size + 1 else o


def taps(size: int) -> int:
    return sum(1 for p in range(out_size(size)) for r in range(3) if 0 <= p * 2 + r - 1 < size)


HO, WO = out_size(H), out_size(W)
# One max per tap inside the input; the second pool's windows are all full.
EXPECT = {"vector": N * C * taps(H) * taps(W) + N * C * (HO // 2) * (WO // 2) * 4}
