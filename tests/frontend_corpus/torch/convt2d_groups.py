"""ConvTranspose2d with stride 2, padding 1, groups 2, without bias."""
import torch

N, CIN, COUT, H, W = 2, 4, 6, 5, 6


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.ConvTranspose2d(CIN, COUT, 4, stride=2, padding=1, groups=2, bias=False)

    def forward(self, x):
        return self.up(x)


def get_inputs():
    return [torch.randn(N, CIN, H, W)]


def get_init_inputs():
    return []


def taps(size: int, out: int) -> int:
    return sum(1 for p in range(size) for r in range(4) if 0 <= p * 2 + r - 1 < out)


HO, WO = (H - 1) * 2 - 2 + 4, (W - 1) * 2 - 2 + 4
EXPECT = {"tensor": 2 * N * (CIN // 2) * COUT * taps(H, HO) * taps(W, WO), "vector": 0}
