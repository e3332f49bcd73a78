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


# The three-operand einsum is two contractions of two, in the order of least FLOPs ((a·b)·c: 2·6·7·8 + 2·6·8·9,
# against 2·7·8·9 + 2·6·7·9 for a·(b·c)), as torch.einsum runs it.
EXPECT = {"tensor": 2 * B * H * L * L * D + 2 * 6 * 7 * 8 + 2 * 6 * 8 * 9}
