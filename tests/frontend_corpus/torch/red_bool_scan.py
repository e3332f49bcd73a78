"""all, any, count_nonzero, cumsum, cumprod."""
import torch

R, C = 5, 7


class Model(torch.nn.Module):
    def forward(self, x):
        mask = x > 0
        return mask.all(dim=1), mask.any(), torch.count_nonzero(x, dim=0), torch.cumsum(x, dim=1), \
            torch.cumprod(x, dim=0)


def get_inputs():
    x = torch.randn(R, C)
    x[0, 0] = 0.0
    return [x]


def get_init_inputs():
    return []


N = R * C
# compare (1); all, any (1 each); count_nonzero compare + add (2); a scan adds (multiplies) once per element.
EXPECT = {"vector": N * (1 + 1 + 1 + 2 + 1 + 1)}
