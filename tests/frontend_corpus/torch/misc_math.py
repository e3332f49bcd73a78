"""Math functions: sin, cos, tan, sinh, cosh, log2, log10, exp2, erfc, trunc, frac, sign, round, floor,
ceil, hypot, xlogy, square, rsqrt, isnan, nan_to_num."""
import torch

B, D = 4, 5


class Model(torch.nn.Module):
    def forward(self, x, y):
        p = x.abs() + 0.1
        return (torch.sin(x), torch.cos(x), torch.tan(x * 0.5), torch.sinh(x), torch.cosh(x), torch.log2(p),
                torch.log10(p), torch.exp2(x), torch.erfc(x), torch.trunc(x * 3), torch.frac(x * 3), torch.sign(x),
                torch.round(x * 3), torch.floor(x), torch.ceil(x), torch.hypot(x, y), torch.xlogy(p, p),
                torch.square(x), torch.rsqrt(p), torch.isnan(torch.log(x)), torch.nan_to_num(torch.log(x)))


def get_inputs():
    return [torch.randn(B, D), torch.randn(B, D)]


def get_init_inputs():
    return []


N = B * D
# abs + add 2; sin, cos 1 each; tan of x·0.5: mul, then sin/cos: 4; sinh, cosh: 5 each; log2 1; log10 2;
# exp2 1; erfc 2; trunc of x·3: 1 + 4; frac of x·3: 1 + 5; sign 1; round of x·3: 2; floor, ceil 1 each;
# hypot 4; xlogy 4; square 1; rsqrt 1; log + isnan 2; log + nan_to_num 7.
EXPECT = {"vector": N * (2 + 1 + 1 + 4 + 5 + 5 + 1 + 2 + 1 + 2 + 5 + 6 + 1 + 2 + 1 + 1 + 4 + 4 + 1 + 1 + 2 + 7)}
