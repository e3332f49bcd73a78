"""RMSNorm, F.normalize, and F.batch_norm with batch statistics (training=True)."""
import torch
import torch.nn.functional as F

B, D = 6, 24


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rms = torch.nn.RMSNorm(D, eps=1e-5)
        self.w = torch.nn.Parameter(torch.rand(D) + 0.5)
        self.b = torch.nn.Parameter(torch.randn(D))

    def forward(self, x):
        bn = F.batch_norm(x, None, None, self.w, self.b, training=True)
        return self.rms(x), F.normalize(x, dim=1), bn


def get_inputs():
    return [torch.randn(B, D)]


def get_init_inputs():
    return []


# Sums of squares x·x are contractions (a product of two operand elements summed): tensor-core FLOPs,
# 2 per element, in RMSNorm and in normalize's 2-norm. The rest: RMSNorm 3 per row (q/n + eps, rsqrt)
# and 2 per element (x·rs·w); normalize a sqrt and a clamp per row, a divide per element; batch norm over
# the batch per feature 9B + 4.
EXPECT = {"tensor": 2 * 2 * B * D, "vector": B * (2 * D + 3) + (B * D + 2 * B) + D * (9 * B + 4)}
