"""A GPT block: layer norm, causal self-attention written out (a masked_fill of a lower-triangular mask), a
residual, layer norm, an MLP with the tanh GELU, a residual (the pattern and sizes of KernelBench L3 44)."""
import math

import torch

batch_size, seq_len, n_embd, n_head, max_seqlen = 128, 512, 768, 8, 1024


class Attention(torch.nn.Module):
    def __init__(self, n_embd, n_head, max_seqlen):
        super().__init__()
        self.c_attn = torch.nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = torch.nn.Linear(n_embd, n_embd)
        self.n_head = n_head
        self.register_buffer("bias", torch.tril(torch.ones(max_seqlen, max_seqlen)).view(1, 1, max_seqlen, max_seqlen))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = torch.softmax(att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf")), dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).contiguous().view(b, t, c))


class Model(torch.nn.Module):
    def __init__(self, n_embd, n_head, max_seqlen):
        super().__init__()
        self.ln_1 = torch.nn.LayerNorm(n_embd)
        self.attn = Attention(n_embd, n_head, max_seqlen)
        self.ln_2 = torch.nn.LayerNorm(n_embd)
        self.fc = torch.nn.Linear(n_embd, 4 * n_embd)
        self.proj = torch.nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        h = self.fc(self.ln_2(x))
        h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
        return x + self.proj(h)


def get_inputs():
    return [torch.rand(batch_size, seq_len, n_embd)]


def get_init_inputs():
    return [n_embd, n_head, max_seqlen]
