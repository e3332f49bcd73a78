"""F.pad (constant, with a negative crop), flip, roll, repeat, tril, triu, diagonal, pixel_shuffle."""
import torch
import torch.nn.functional as F

B, C, H, W = 2, 4, 4, 6


class Model(torch.nn.Module):
    def forward(self, x, m):
        return (F.pad(x, (1, 2, -1, 1), value=0.5), torch.flip(x, dims=[2, 3]), torch.roll(x, 2, dims=3),
                m.repeat(2, 3), torch.tril(m), torch.triu(m, diagonal=1), torch.diagonal(m), F.pixel_shuffle(x, 2))


def get_inputs():
    return [torch.randn(B, C, H, W), torch.randn(5, 5)]


def get_init_inputs():
    return []


# Copies only, except tril and triu: a compare (j − i vs k: subtract, compare) and a select per element.
EXPECT = {"vector": 2 * 3 * 25}
