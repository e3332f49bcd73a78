"""AvgPool2d with padding: count_include_pad False (divisor counted in the kernel) and True (constant)."""
import torch

N, C, H, W = 2, 3, 8, 7


class Model(torch.nn.Module):
    def forward(self, x):
        return (torch.nn.functional.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False),
                torch.nn.functional.avg_pool2d(x, 3, stride=2, padding=1),
                torch.nn.functional.avg_pool2d(x, 2))


def get_inputs():
    return [torch.randn(N, C, H, W)]


def get_init_inputs():
    return []


def taps(size: int) -> int:
    out = (size + 2 - 3) // 2 + 1
    return sum(1 for p in range(out) for r in range(3) if 0 <= p * 2 + r - 1 < size)


HO, WO = (H - 1) // 2 + 1, (W - 1) // 2 + 1
T = taps(H) * taps(W)
# (1) an add per tap; per output a divide and the divisor in closed form: per dim max(2p − 1, 0) and
#     2p + 2 (4 ops + max + the difference: 6), min(…, W) as well along W (7), their product (1): 15 ops;
# (2) every window fits the padded input: the divisor is the constant 9, one divide per output;
# (3) full 2x2 windows: 4 adds and a divide.
EXPECT = {"vector": N * C * (T + 15 * HO * WO) + N * C * (T + HO * WO) + N * C * (H // 2) * (W // 2) * 5}
