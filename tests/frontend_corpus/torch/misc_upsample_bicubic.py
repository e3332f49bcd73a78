"""Bicubic upsampling (align_corners both ways, a scale factor and a size): one affine kernel each, four
clamped taps per axis; pixel_unshuffle (a view)."""
import torch
import torch.nn.functional as F

B, C = 2, 3


class Model(torch.nn.Module):
    def forward(self, x):
        return (F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=False),
                F.interpolate(x, size=(5, 7), mode="bicubic", align_corners=True),
                F.pixel_unshuffle(x, 2))


def get_inputs():
    return [torch.randn(B, C, 4, 4)]


def get_init_inputs():
    return []


# Each output element is a separable cubic interpolation: four 4-tap sums along the last axis (4
# multiplications, 3 additions each) and one along the other, 5 · 7 = 35 operations, in every range of
# outputs (a clamped tap still reads an element). Per output coordinate and axis, the fraction t costs the
# numerator A(o) = a·o + b (a multiplication unless a = 1, an addition unless b = 0), its remainder mod d and
# a division by d; the four weights (Horner, as PyTorch writes them) 9 + 5 + 8 + 9 = 31 operations.
# 4 → 8, align_corners=False: A = 2o − 1, d = 4 on both axes: 8 · (4 + 31) per axis.
# 4 → 5, align_corners=True: A = 3o, d = 4: 5 · (3 + 31); 4 → 7: A = o, d = 2: 7 · (2 + 31).
EXPECT = {"vector": B * C * (64 + 35) * 35 + 2 * 8 * 35 + 5 * 34 + 7 * 33, "tensor": 0}
