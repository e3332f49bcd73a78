"""scatter (src), scatter_add, scatter_reduce (amax), index_put (accumulate) and advanced indexing."""
import torch

R, C = 4, 6


class Model(torch.nn.Module):
    def forward(self, x, idx, src, rows, vals):
        a = torch.scatter(x, 1, idx, src)
        b = torch.scatter_add(x, 1, idx, src)
        c = x.scatter_reduce(1, idx, src, reduce="amax")
        d = x.index_put((rows,), vals, accumulate=True)
        return a, b, c, d, x[rows], x[rows, rows]


def get_inputs():
    idx = torch.stack([torch.randperm(C)[:3] for _ in range(R)])  # distinct per row: scatter is deterministic
    return [torch.randn(R, C), idx, torch.randn(R, 3), torch.tensor([2, 0, 2]), torch.randn(3, C)]


def get_init_inputs():
    return []


# Flat positions for the three scatters: 2 ops per index element (I + 6·p or 6·I + p); x[rows, rows]
# computes a combined index per element: two wrap-arounds (compare, add, select: 3 each), a multiply and
# an add (8).
EXPECT = {"vector": 3 * 2 * R * 3 + 8 * 3}
