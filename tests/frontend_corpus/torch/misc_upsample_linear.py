"""Bilinear upsampling (align_corners both ways), trilinear upsampling: one affine kernel each."""
import torch
import torch.nn.functional as F

B, C = 2, 3


class Model(torch.nn.Module):
    def forward(self, x, v):
        return (F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False),
                F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True),
                F.interpolate(v, size=(4, 4, 4), mode="trilinear", align_corners=True))


def get_inputs():
    return [torch.randn(B, C, 4, 4), torch.randn(B, C, 2, 2, 2)]


def get_init_inputs():
    return []


# Each output is a separable lerp: 3 operations (2 multiplications, 1 addition) per axis with two taps, at
# every level of the nest, so 3·(2^d − 1) where all d axes have two taps; an axis whose taps collapse to one
# (the clamp at the low edge, the last element) drops its level. Tap weights are computed once per interior
# coordinate per axis: the numerator A(o) = a·o + b (a multiplication unless a = 1, an addition unless
# b = 0), its remainder mod d, the division by d, and 1 − it (casts cost nothing).
# 4 → 8, align_corners=False (A = 2o − 1, d = 4): per axis 1 low, 6 interior, 1 high output.
#   Per plane: 36·9 + 2·12·3 = 396; weights 2 axes · 6 · 5.
# 4 → 8, align_corners=True (A = 3o, d = 7): 7 interior, 1 high. Per plane: 49·9 + 2·7·3 = 483; weights 2 · 7 · 4.
# 2 → 4 (3 axes), align_corners=True (A = o, d = 3): 3 interior, 1 high per axis.
#   Per volume: 27·21 + 3·9·9 + 3·3·3 = 837; weights 3 · 3 · 3.
EXPECT = {"vector": B * C * (396 + 483 + 837) + 2 * 6 * 5 + 2 * 7 * 4 + 3 * 3 * 3}
