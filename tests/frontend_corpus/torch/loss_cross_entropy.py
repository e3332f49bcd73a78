"""cross_entropy: class weights with ignore_index (mean), label smoothing (none), and a 4-D input."""
import torch
import torch.nn.functional as F

B, C, H, W = 6, 5, 3, 4


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("w", torch.rand(C) + 0.5)

    def forward(self, x, t, img, t2):
        return (F.cross_entropy(x, t, weight=self.w, ignore_index=2), F.cross_entropy(x, t, label_smoothing=0.1,
                                                                                      reduction="none"),
                F.cross_entropy(img, t2, reduction="sum"))


def get_inputs():
    return [torch.randn(B, C), torch.randint(0, C, (B,)), torch.randn(B, C, H, W), torch.randint(0, C, (B, H, W))]


def get_init_inputs():
    return []

# Per row of C classes: max (C), Σ exp(x − max) (3C), log-sum-exp (2), the target's logit by
# compare-select-add per class (3C). Weighted with ignore_index (mean): the weight likewise (3C), the row's
# loss select(valid, (lse − pick)·w) added (5) and its weight added (3), one divide. Smoothing (none):
# Σ (lse − x) (2C) and 6 per row (0.1 / C is a constant of the program, computed once, as after
# --bind-params). The 4-D sum: 4 + 3 per row.
EXPECT = {"vector": B * (10 * C + 10) + 1 + B * (9 * C + 8) + B * H * W * (7 * C + 9)}
