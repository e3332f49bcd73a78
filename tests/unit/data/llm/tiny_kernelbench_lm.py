"""A KernelBench-style language model for solar-llm (docs/llm.md, "KernelBench-style files"): one decoder
layer of causal self-attention and an MLP, its decode step appending to a cache passed in."""

import torch
import torch.nn.functional as F
from torch import nn

batch_size = 2
prompt = 16
context = 32
num_layers = 1
hidden_size = 32
num_heads = 4
vocab_size = 64


class Model(nn.Module):
    def __init__(self, vocab: int, hidden: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.embed = nn.Embedding(vocab, hidden)
        self.q = nn.Linear(hidden, hidden, bias=False)
        self.k = nn.Linear(hidden, hidden, bias=False)
        self.v = nn.Linear(hidden, hidden, bias=False)
        self.out = nn.Linear(hidden, hidden, bias=False)
        self.up = nn.Linear(hidden, 4 * hidden, bias=False)
        self.down = nn.Linear(4 * hidden, hidden, bias=False)
        self.head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, ids: torch.Tensor, k_cache: torch.Tensor | None = None,
                v_cache: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
        x = self.embed(ids)
        b, t, h = x.shape
        q, k, v = (p(x).view(b, t, self.heads, h // self.heads).transpose(1, 2) for p in (self.q, self.k, self.v))
        new_k, new_v = k, v  # what the cache gains: returned, so that it is written once
        if k_cache is not None:
            k, v = torch.cat([k_cache, k], dim=2), torch.cat([v_cache, v], dim=2)
            a = F.scaled_dot_product_attention(q, k, v)  # one query: every cached key is live
        else:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(a.transpose(1, 2).reshape(b, t, h))
        x = x + self.down(F.gelu(self.up(x)))
        return self.head(x[:, -1:]), new_k, new_v


def get_init_inputs():
    return [vocab_size, hidden_size, num_heads]


def get_inputs():
    return [torch.randint(0, vocab_size, (batch_size, prompt))]


def get_decode_inputs():
    shape = (batch_size, num_heads, context, hidden_size // num_heads)
    return [torch.randint(0, vocab_size, (batch_size, 1)), torch.randn(shape), torch.randn(shape)]
