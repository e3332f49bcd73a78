"""A mixture-of-experts block with top-k routing (Mixtral-style: a linear router, top-2 of 8 experts,
softmax over the chosen logits, SwiGLU experts), written with dense dispatch: every expert runs on every
token and the gate, zero outside the top k, weights the sum. The bound prices that dense program as it
runs; a sparse dispatch (tokens gathered per expert) needs data-dependent sizes (nonzero), not lowered yet."""

import torch
import torch.nn.functional as F
from torch import nn

CONFIG = {"hidden": 32, "ffn": 64, "experts": 8, "top_k": 2}
FULL = {"hidden": 4096, "ffn": 14336, "experts": 8, "top_k": 2}  # Mixtral-8x7B's block
BATCH, SEQ = 2, 8
FULL_INPUT = (1, 512)


class Model(nn.Module):
    def __init__(self, config: dict | None = None) -> None:
        super().__init__()
        c = config or CONFIG
        h, f, e = c["hidden"], c["ffn"], c["experts"]
        self.top_k = c["top_k"]
        self.router = nn.Linear(h, e, bias=False)
        self.w_gate = nn.Parameter(torch.randn(e, h, f) * h ** -0.5)
        self.w_up = nn.Parameter(torch.randn(e, h, f) * h ** -0.5)
        self.w_down = nn.Parameter(torch.randn(e, f, h) * f ** -0.5)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.router(x)  # b, s, e
        top, chosen = torch.topk(logits, self.top_k, dim=-1)
        gate = torch.zeros_like(logits).scatter(-1, chosen, F.softmax(top, dim=-1))
        hidden = F.silu(torch.einsum("bsh,ehf->bsef", x, self.w_gate)) * torch.einsum("bsh,ehf->bsef", x, self.w_up)
        out = torch.einsum("bsef,efh->bseh", hidden, self.w_down)
        return torch.einsum("bseh,bse->bsh", out, gate), chosen


def get_inputs(shape: tuple[int, int] = (BATCH, SEQ), config: dict | None = None) -> list[torch.Tensor]:
    return [torch.randn(*shape, (config or CONFIG)["hidden"])]


def get_init_inputs() -> list:
    return []


def expected_tensor_flops(c: dict, b: int, s: int) -> int:
    """2·MACs: the router, three expert matmuls for every (token, expert), and the gated sum."""
    t, h, f, e = b * s, c["hidden"], c["ffn"], c["experts"]
    return 2 * (t * h * e + t * e * 3 * h * f + t * e * h)


EXPECT = {"tensor": expected_tensor_flops(CONFIG, BATCH, SEQ)}
