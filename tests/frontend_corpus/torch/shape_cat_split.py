"""cat, stack, split, chunk, unbind, narrow, select, slicing with steps and negative indices."""
import torch

B, D = 4, 12


class Model(torch.nn.Module):
    def forward(self, x, y):
        a, b = torch.split(x, [5, 7], dim=1)
        c = torch.chunk(x, 3, dim=1)
        u = torch.unbind(y, dim=1)
        s = torch.stack([a[:, :2], b[:, -2:]], dim=0)
        return torch.cat([b, a], dim=1), c[2] * 2, u[1], s, x.narrow(1, 3, 4), x[:, ::3], x[:, -1], y[1:, 1:3]


def get_inputs():
    return [torch.randn(B, D), torch.randn(B, 3)]


def get_init_inputs():
    return []


# Only c[2] * 2 computes.
EXPECT = {"vector": B * 4}
