"""Multi-head latent attention (MLA, DeepSeek-V2) at decode time, written as the reference code does it.

The cache holds one latent vector per past token (`c_kv`, width D_C) instead of per-head keys and values.
Written naively, every step up-projects the whole cache into keys (`W_uk`) and values (`W_uv`) before the
attention. `solar-opt --lift-einsum --reorder-einsum` finds the cheaper association: absorb `W_uk` into the
query (scores against the latent cache directly) and `W_uv` into the output projection side, the rewrite
DeepSeek describes. docs/reorder.md has the figures.
"""
import torch

# Query tokens per step (decode: a few), cached tokens, model width, heads, head width, latent width.
Q_LEN, KV_LEN, D_MODEL, HEADS, D_HEAD, D_LATENT = 8, 4096, 2048, 16, 128, 512


class Model(torch.nn.Module):
    def __init__(self, d_model: int, heads: int, d_head: int, d_latent: int) -> None:
        super().__init__()
        self.heads, self.d_head = heads, d_head
        self.w_q = torch.nn.Linear(d_model, heads * d_head, bias=False)
        self.w_uk = torch.nn.Linear(d_latent, heads * d_head, bias=False)  # latent -> keys
        self.w_uv = torch.nn.Linear(d_latent, heads * d_head, bias=False)  # latent -> values
        self.w_o = torch.nn.Linear(heads * d_head, d_model, bias=False)

    def forward(self, x: torch.Tensor, c_kv: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        t = c_kv.shape[1]
        q = self.w_q(x).view(b, s, self.heads, self.d_head).transpose(1, 2)        # b h s d
        k = self.w_uk(c_kv).view(b, t, self.heads, self.d_head).transpose(1, 2)    # b h t d
        v = self.w_uv(c_kv).view(b, t, self.heads, self.d_head).transpose(1, 2)    # b h t d
        scores = torch.matmul(q, k.transpose(-1, -2))                                # b h s t
        p = torch.softmax(scores, dim=-1)
        o = torch.matmul(p, v).transpose(1, 2).reshape(b, s, self.heads * self.d_head)
        return self.w_o(o)


def get_inputs():
    return [torch.randn(1, Q_LEN, D_MODEL), torch.randn(1, KV_LEN, D_LATENT)]


def get_init_inputs():
    return [D_MODEL, HEADS, D_HEAD, D_LATENT]
