"""scaled_dot_product_attention: plain, with a boolean mask, and with a float mask and explicit scale."""
import torch
import torch.nn.functional as F

B, H, L, S, E = 2, 3, 6, 8, 4


class Model(torch.nn.Module):
    def forward(self, q, k, v, bmask, fmask):
        return (F.scaled_dot_product_attention(q, k, v), F.scaled_dot_product_attention(q, k, v, attn_mask=bmask),
                F.scaled_dot_product_attention(q, k, v, attn_mask=fmask, scale=0.3))


def get_inputs():
    bmask = torch.rand(L, S) > 0.3
    bmask[:, 0] = True  # every query sees at least one key
    return [torch.randn(B, H, L, E), torch.randn(B, H, S, E), torch.randn(B, H, S, E), bmask, torch.randn(B, 1, L, S)]


def get_init_inputs():
    return []


P = B * H * L * S
# Scores and values: contractions (what FlopCounterMode counts). Softmax per score: scale (1), max (1),
# scale + sub + exp + add (4), scale + sub + exp + div (4) = 10; a mask adds a select or an add where it is
# read (3 places).
EXPECT = {"tensor": "counter", "vector": 3 * 10 * P + 2 * 3 * P}
