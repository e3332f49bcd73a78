"""dtype conversions and integer/boolean arithmetic: casts to f16, bf16, i32, f64; integer add, floor
division and remainder; summing a boolean mask; a float64 matmul."""
import torch

B, D = 6, 8


class Model(torch.nn.Module):
    def forward(self, x, k, w):
        h = x.half() * 2
        b = torch.relu(x.bfloat16())
        i = (x * 10).to(torch.int32)
        j = k + 3
        q = torch.floor_divide(k, 4) + torch.remainder(k, 3)
        cnt = (x > 0).sum(dim=1)
        d = x.double() @ w
        return h, b, i, j, q, cnt, d


def get_inputs():
    return [torch.randn(B, D), torch.randint(-20, 20, (B, D)), torch.randn(D, 3, dtype=torch.float64)]


def get_init_inputs():
    return []


N = B * D
# Casts are not FLOPs. f16 multiply 1; bf16 relu 1; x·10 1; k + 3 1; floordiv, mod, add 3; compare and
# the boolean sum 2; the f64 matmul is a contraction.
EXPECT = {"tensor": 2 * B * D * 3, "vector": N * (1 + 1 + 1 + 1 + 3 + 2)}
