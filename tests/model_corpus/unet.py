"""A UNet-like convolutional network: two down levels (conv, group norm, SiLU, stride-2 conv), a bottleneck,
two up levels (bilinear upsampling, skip concatenation, conv), reflect-padded input convolution."""

import torch
import torch.nn.functional as F
from torch import nn

CONFIG = {"channels": 3, "width": 8, "size": 16}
FULL = {"channels": 3, "width": 64, "size": 256}
BATCH = 2
FULL_BATCH = 8


class Block(nn.Module):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1)
        self.norm = nn.GroupNorm(4, cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(self.norm(self.conv(x)))


class Model(nn.Module):
    def __init__(self, config: dict | None = None) -> None:
        super().__init__()
        c = config or CONFIG
        w, ch = c["width"], c["channels"]
        self.inp = nn.Conv2d(ch, w, 3)  # applied after reflect padding
        self.down1, self.pool1 = Block(w, w), nn.Conv2d(w, w, 2, stride=2)
        self.down2, self.pool2 = Block(w, 2 * w), nn.Conv2d(2 * w, 2 * w, 2, stride=2)
        self.mid = Block(2 * w, 2 * w)
        self.up2 = Block(4 * w, w)
        self.up1 = Block(2 * w, w)
        self.out = nn.Conv2d(w, ch, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h0 = self.inp(F.pad(x, (1, 1, 1, 1), mode="reflect"))
        h1 = self.down1(h0)
        h2 = self.down2(self.pool1(h1))
        m = self.mid(self.pool2(h2))
        u2 = self.up2(torch.cat([F.interpolate(m, scale_factor=2, mode="bilinear"), h2], dim=1))
        u1 = self.up1(torch.cat([F.interpolate(u2, scale_factor=2, mode="bilinear"), h1], dim=1))
        return self.out(u1)


def get_inputs(batch: int = BATCH, config: dict | None = None) -> list[torch.Tensor]:
    c = config or CONFIG
    return [torch.randn(batch, c["channels"], c["size"], c["size"])]


def get_init_inputs() -> list:
    return []


# Every convolution is unpadded after the reflect pad or padded with 'same' 3x3 taps; the padded ones count
# only valid taps (docs/frontends.md), so the counter, which counts every tap, is an upper bound: the tensor
# FLOPs are checked by the formula below, which counts valid taps per axis.
def _valid_taps(n: int, k: int = 3, pad: int = 1) -> int:
    """Σ over output positions of the taps that land inside a length-n axis (stride 1)."""
    return sum(sum(1 for r in range(k) if 0 <= o + r - pad < n) for o in range(n))


def expected_tensor_flops(c: dict, b: int) -> int:
    w, ch, s = c["width"], c["channels"], c["size"]

    def conv3(cin: int, cout: int, n: int) -> int:
        return b * cin * cout * _valid_taps(n) ** 2

    macs = (b * ch * w * 9 * s * s  # input conv on the reflect-padded image: every tap valid
            + conv3(w, w, s) + b * w * w * 4 * (s // 2) ** 2  # down1, pool1
            + conv3(w, 2 * w, s // 2) + b * 2 * w * 2 * w * 4 * (s // 4) ** 2  # down2, pool2
            + conv3(2 * w, 2 * w, s // 4)  # mid
            + conv3(4 * w, w, s // 2) + conv3(2 * w, w, s)  # up2, up1
            + b * w * ch * s * s)  # 1x1 output conv
    return 2 * macs


EXPECT = {"tensor": expected_tensor_flops(CONFIG, BATCH)}
