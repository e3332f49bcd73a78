"""mse_loss, l1_loss, smooth_l1_loss (beta), huber_loss (delta), with mean, sum and none reductions."""
import torch
import torch.nn.functional as F

B, D = 7, 9


class Model(torch.nn.Module):
    def forward(self, x, y):
        return (F.mse_loss(x, y), F.l1_loss(x, y, reduction="sum"), F.smooth_l1_loss(x, y, beta=0.5),
                F.huber_loss(x, y, delta=0.8, reduction="none"))


def get_inputs():
    return [torch.randn(B, D), torch.randn(B, D)]


def get_init_inputs():
    return []


N = B * D

N = B * D
# mse: d = x − y (1), then Σ d·d, a contraction (2 tensor-core FLOPs); l1: sub, abs, add; smooth_l1 and
# huber: |x − y| once per element (2), then compare, square, subtract, select (+ add): 5, and huber 6
# (its two scales). Means divide by BATCH·D: a divide each (BATCH·D, sizes alone, is a constant).
EXPECT = {"tensor": 2 * N, "vector": N + 1 + 3 * N + 7 * N + 1 + 8 * N}
