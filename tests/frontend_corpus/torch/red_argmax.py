"""argmax, argmin (keepdim), max over a dim (values and indices), argmax over all elements."""
import torch

A, B, C = 5, 8, 6


class Model(torch.nn.Module):
    def forward(self, x):
        values, indices = torch.max(x, dim=1)
        return x.argmax(dim=1), x.argmin(dim=-1, keepdim=True), values, indices, x.argmax()


def get_inputs():
    return [torch.randn(A, B, C)]


def get_init_inputs():
    return []


N = A * B * C

N = A * B * C
# Per element: the extreme (1), then compare, select and min over the index (3); over all elements the flat
# index 48·r0 + 6·r1 + r2 adds 4.
EXPECT = {"vector": 3 * 4 * N + 8 * N}
