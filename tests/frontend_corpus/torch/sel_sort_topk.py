"""Sorting and selection: sort, argsort, topk beyond k = 8, kthvalue, median (by dim and of all), cummax,
nonzero and boolean-mask indexing (results whose size depends on the data, returned)."""
import torch

B, N = 2, 16


class Model(torch.nn.Module):
    def forward(self, x, m):
        values, order = torch.sort(x, dim=-1, descending=True)
        top, where = torch.topk(x, 10, dim=-1)
        kth = torch.kthvalue(x, 3, dim=1)
        return (values, order, torch.argsort(x, dim=0), top, where, kth[0], torch.median(x, dim=1)[1],
                torch.median(x), torch.cummax(x, dim=1)[0], torch.nonzero(m), x[m])


def get_inputs():
    return [torch.randn(B, N), torch.rand(B, N) > 0.5]


def get_init_inputs():
    return []


# Comparisons, at least (docs/counts.md, "Data-dependent ops"), per line of n: sort ⌈log₂ n!⌉ (16! → 45,
# 2! → 1), topk (n − k) + ⌈log₂ k!⌉ (10! → 22), kthvalue n − 1 + min(k − 1, n − k), cummax n − 1,
# nonzero and masked select one test per mask element. The median of all 32 elements is the 16th.
# sort along 16: 45; argsort along the batch (2! → 1) per column; topk k = 10: 6 + 22; kthvalue k = 3: 15 + 2;
# median of 16 (the 8th): 15 + 7; of all 32 (the 16th): 31 + 15; cummax 15; nonzero and x[m]: B·N each.
EXPECT = {"vector": B * 45 + N * 1 + B * (6 + 22) + B * (15 + 2) + B * (15 + 7) + (31 + 15) + B * 15
          + B * N + B * N, "tensor": 0}
