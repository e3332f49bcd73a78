"""Small programs that more than one training test translates: KernelBench-style source, and modules."""

import textwrap
from pathlib import Path
from typing import Any

# A pre-norm GPT block, d 32, 2 heads of 16, causal SDPA: 2 × 16 tokens.
GPT = """
import torch, torch.nn as nn, torch.nn.functional as F
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(32); self.qkv = nn.Linear(32, 96); self.proj = nn.Linear(32, 32)
        self.fc = nn.Linear(32, 128); self.out = nn.Linear(128, 32)
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, 2, 16).transpose(1, 2) for t in self.qkv(self.ln(x)).split(C, dim=-1))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(a)
        return x + self.out(F.gelu(self.fc(x)))
def get_inputs():
    return [torch.randn(2, 16, 32)]
def get_init_inputs():
    return []
"""


def two_layer_mlp() -> Any:
    """A bias-free 32 → 64 → 32 MLP with a ReLU between (6,144 parameters), for `solar.analyze(train=True)`."""
    import torch

    class Mlp(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = torch.nn.Linear(32, 64, bias=False)
            self.fc2 = torch.nn.Linear(64, 32, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc2(torch.relu(self.fc1(x)))

    return Mlp()


def write_program(folder: Path, name: str, body: str) -> str:
    """`body` (a KernelBench-style program) written as `folder/name.py`; its path."""
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return str(path)
