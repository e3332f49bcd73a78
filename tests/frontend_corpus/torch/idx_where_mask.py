"""where, masked_fill (scalar and tensor value), comparisons, logical ops."""
import torch

B, D = 6, 7


class Model(torch.nn.Module):
    def forward(self, x, y):
        m = (x > 0) & (y <= 0.5)
        z = torch.where(m, x, y)
        f = x.masked_fill(~m, float("-inf")).softmax(dim=-1)
        g = torch.where(x != y, x * 2, 0.0)
        return z, f, g, torch.logical_or(m, x.eq(y)), torch.logical_xor(m, y < 0)


def get_inputs():
    return [torch.randn(B, D), torch.randn(B, D)]


def get_init_inputs():
    return []


N = B * D
# Per element: gt, le (2; and, or, not are logic, not FLOPs); where 1; masked_fill 1, softmax 7; ne, mul,
# where (3); eq 1; lt 1, xor (a compare) 1.
EXPECT = {"vector": N * (2 + 1 + 1 + 7 + 3 + 1 + 2)}
