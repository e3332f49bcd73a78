"""Causal scaled_dot_product_attention: triangular loops, only the unmasked half is iterated."""
import torch
import torch.nn.functional as F

B, H, L, E = 2, 2, 9, 8


class Model(torch.nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def get_inputs():
    return [torch.randn(B, H, L, E), torch.randn(B, H, L, E), torch.randn(B, H, L, E)]


def get_init_inputs():
    return []


TRI = L * (L + 1) // 2  # the (i, j ≤ i) pairs
EXPECT = {"tensor": 2 * B * H * TRI * E * 2, "vector": 10 * B * H * TRI}
