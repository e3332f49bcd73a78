"""Arithmetic: add/sub with alpha, rsub, mul, div (rounding modes), pow, remainder, fmod, floor_divide,
reciprocal, clamp, lerp, addcmul, addcdiv."""
import torch

B, D = 5, 6


class Model(torch.nn.Module):
    def forward(self, x, y):
        z = y.abs() + 0.5
        return (torch.add(x, y, alpha=2.0), torch.sub(x, y, alpha=0.5), torch.rsub(x, 1.0), x * y, x / z,
                torch.div(x, z, rounding_mode="floor"), torch.div(x, z, rounding_mode="trunc"), z.pow(1.5), x.pow(2),
                torch.pow(2.0, x), torch.remainder(x, z), torch.fmod(x, z), torch.floor_divide(x, z),
                torch.reciprocal(z), x.clamp(-0.5, 0.5), x.clamp(min=0.1), torch.lerp(x, y, 0.3),
                torch.addcmul(x, y, z, value=0.5), torch.addcdiv(x, y, z))


def get_inputs():
    return [torch.randn(B, D), torch.randn(B, D)]


def get_init_inputs():
    return []


N = B * D
# abs, add (2); add·alpha 2; sub·alpha 2; rsub 1; mul 1; div 1; floor division 2; trunc division 7 (the
# quotient is formed in each of select(q < 0, ceil(q), floor(q))'s three places); pow 1; x² as x·x 1; 2^x 1;
# remainder 4; fmod 9; floor_divide 2; reciprocal 1; clamp 2; clamp_min 1; lerp 3; addcmul 3; addcdiv 2.
EXPECT = {"vector": N * (2 + 2 + 2 + 1 + 1 + 1 + 2 + 7 + 1 + 1 + 1 + 4 + 9 + 2 + 1 + 2 + 1 + 3 + 3 + 2)}
