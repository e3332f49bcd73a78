"""A pre-LN transformer block: LayerNorm, causal multi-head attention via SDPA, MLP with GELU, residuals."""
import torch
import torch.nn as nn
import torch.nn.functional as F

B, L, D, H, FF = 2, 8, 32, 4, 64


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(D)
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)
        self.ln2 = nn.LayerNorm(D)
        self.up = nn.Linear(D, FF)
        self.down = nn.Linear(FF, D)

    def forward(self, x):
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=-1)
        q, k, v = (t.view(B, L, H, D // H).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, L, D)
        x = x + self.proj(a)
        return x + self.down(F.gelu(self.up(self.ln2(x))))


def get_inputs():
    return [torch.randn(B, L, D)]


def get_init_inputs():
    return []


TRI = L * (L + 1) // 2
EXPECT = {"tensor": 2 * B * L * D * (3 * D + D + 2 * FF) + 2 * 2 * B * H * TRI * (D // H)}
