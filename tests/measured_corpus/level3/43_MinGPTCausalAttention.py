"""KernelBench L3 43: minGPT's causal self-attention (768 wide, 8 heads, a 1024 x 1024 tril mask buffer
sliced to 512 tokens, dropout 0), batch 128 (f32)."""
import math

import torch

batch_size = 128
max_seqlen = 1024
seq_len = 512
n_embd = 768
n_head = 8


class Model(torch.nn.Module):
    def __init__(self, width: int, heads: int, attn_pdrop: float, resid_pdrop: float, max_len: int) -> None:
        super().__init__()
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.out = torch.nn.Linear(width, width)
        self.attn_drop = torch.nn.Dropout(attn_pdrop)
        self.resid_drop = torch.nn.Dropout(resid_pdrop)
        self.register_buffer("mask", torch.tril(torch.ones(max_len, max_len)).view(1, 1, max_len, max_len))
        self.heads = heads
        self.width = width

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        d = c // self.heads
        q, k, v = self.qkv(x).split(self.width, dim=2)
        q = q.view(b, t, self.heads, d).transpose(1, 2)
        k = k.view(b, t, self.heads, d).transpose(1, 2)
        v = v.view(b, t, self.heads, d).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
        scores = scores.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        weights = self.attn_drop(torch.softmax(scores, dim=-1))
        y = (weights @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.resid_drop(self.out(y))


def get_inputs():
    return [torch.rand(batch_size, seq_len, n_embd)]


def get_init_inputs():
    return [n_embd, n_head, 0.0, 0.0, max_seqlen]
