"""Tensors made in forward (arange, zeros_like, ones, full, eye) and nearest upsampling (scale and size)."""
import torch
import torch.nn.functional as F

B, C, H, W = 2, 3, 4, 5


class Model(torch.nn.Module):
    def forward(self, x, v):
        pos = torch.arange(W, dtype=torch.float32) * 0.5
        z = torch.zeros_like(v) + torch.ones(v.shape[0], 7) + torch.full((1, 7), 2.0) + torch.eye(7)[0]
        return (x + pos, z, F.interpolate(x, scale_factor=2, mode="nearest"),
                F.interpolate(x, size=(6, 7), mode="nearest"), F.interpolate(x, size=(7, 9), mode="nearest-exact"))


def get_inputs():
    return [torch.randn(B, C, H, W), torch.randn(3, 7)]


def get_init_inputs():
    return []


# arange: a cast, then ×0.5 (1 per element); x + pos (1 per element of x); three adds on (3, 7). The 7×7
# identity is a value of its indices alone: lifting reads its row 0 as an index expression inside the add that
# uses it (compare and select per element of (3, 7)), and the eye kernel goes. Nearest upsampling only copies.
EXPECT = {"vector": W + B * C * H * W + 3 * 3 * 7 + 2 * 3 * 7}
