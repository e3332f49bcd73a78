"""AdaptiveAvgPool2d to a size that divides (8 → 4) and one that does not (7 → 3), flattened."""
import torch

N, C = 2, 4


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.AdaptiveAvgPool2d(4)
        self.b = torch.nn.AdaptiveAvgPool2d(3)

    def forward(self, x, y):
        return torch.flatten(self.a(x), 1), self.b(y)


def get_inputs():
    return [torch.randn(N, C, 8, 8), torch.randn(N, C, 7, 7)]


def get_init_inputs():
    return []


def windows(size: int, out: int) -> int:
    return sum(-(-((i + 1) * size) // out) - (i * size) // out for i in range(out))


# (a) an add per window point and a divide per output; (b) windows 7 → 3 overlap: an add per point, and per
#     output the divisor ⌈(i+1)·7/3⌉ − ⌊i·7/3⌋ per dim (6 ops), their product and the divide (14 ops).
EXPECT = {"vector": N * C * (64 + 16) + N * C * (windows(7, 3) ** 2 + 9 * 14)}
