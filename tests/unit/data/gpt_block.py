import torch
from torch import nn


class Attn(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, d: int = 256) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = Attn(d)
        self.ln_2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.out(torch.nn.functional.gelu(self.fc(self.ln_2(x))))
