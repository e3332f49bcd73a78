"""sum, mean (keepdim, several dims), amax, amin, and full reductions."""
import torch

A, B, C = 4, 6, 5


class Model(torch.nn.Module):
    def forward(self, x):
        return (x.sum(dim=1), x.mean(dim=(0, 2), keepdim=True), x.amax(dim=-1), x.amin(dim=0), x.sum(), x.mean())


def get_inputs():
    return [torch.randn(A, B, C)]


def get_init_inputs():
    return []


N = A * B * C

N = A * B * C
# One op per element for each reduction; a mean also divides per output. Its count BATCH·n (the batch dim
# is a size parameter) is made of sizes alone, a constant of the kernel: it costs nothing per output.
EXPECT = {"vector": 6 * N + B + 1}
