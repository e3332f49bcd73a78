"""LayerNorm over the last dim (affine) and over the last two dims (no affine)."""
import torch

B, S, D = 3, 5, 16


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.LayerNorm(D)
        self.b = torch.nn.LayerNorm([S, D], elementwise_affine=False, eps=1e-6)

    def forward(self, x):
        return self.a(x), self.b(x)


def get_inputs():
    return [torch.randn(B, S, D) * 3 + 1]


def get_init_inputs():
    return []


# Per row of n: n adds (sum), 1 divide (mean), 4n (squared deviations), 3 (rsqrt(q/n + eps)), then
# 4n (affine: sub, mul, mul, add) or 2n (sub, mul).
EXPECT = {"vector": B * S * (9 * D + 4) + B * (7 * S * D + 4)}
