"""binary_cross_entropy (weighted), binary_cross_entropy_with_logits (pos_weight), poisson_nll_loss."""
import torch
import torch.nn.functional as F

B, D = 6, 5


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("pw", torch.rand(D) + 0.5)

    def forward(self, x, t, w):
        return (F.binary_cross_entropy(torch.sigmoid(x), t, weight=w),
                F.binary_cross_entropy_with_logits(x, t, pos_weight=self.pw), F.poisson_nll_loss(x, t))


def get_inputs():
    return [torch.randn(B, D), torch.rand(B, D), torch.rand(B, D)]


def get_init_inputs():
    return []


N = B * D

N = B * D
# sigmoid 1; bce 12 per element (two clamped logs, the weighted sum, the add); with_logits 15; poisson 4;
# each mean divides by BATCH·D (a divide; BATCH·D is made of sizes alone, a constant of the kernel).
EXPECT = {"vector": N * (1 + 12 + 15 + 4) + 3 * 1}
