"""torch.einsum: attention scores, a three-operand contraction and an ellipsis."""
import torch

B, H, L, D = 2, 3, 10, 8


class Model(torch.nn.Module):
    def forward(self, q, k, a, b, c):
        s = torch.einsum("bhid,bhjd->bhij", q, k)
        t = torch.einsum("ij,jk,kl->il", a, b, c)
        u = torch.einsum("...ij->...ji", q)
        return s, t, u


def get_inputs():
    return [torch.randn(B, H, L, D), torch.randn(B, H, L, D), torch.randn(6, 7), torch.randn(7, 8),
            torch.randn(8, 9)]


def get_init_inputs():
    return []


# The three-operand einsum is one kernel: 6·9 outputs × 7·8 terms, two multiplies and one add each
# (lifted as one tensor contraction of the pairwise product... counted as vector work: 3 operands).
EXPECT = {"tensor": 2 * B * H * L * L * D}
