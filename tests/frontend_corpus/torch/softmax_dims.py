"""softmax over dim 1 of a 3-D tensor, log_softmax over the last dim, softmin."""
import torch

A, B, C = 3, 7, 5


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1), torch.log_softmax(x, dim=-1), torch.nn.functional.softmin(x, dim=0)


def get_inputs():
    return [torch.randn(A, B, C) * 5]


def get_init_inputs():
    return []


# softmax per element: max (1), exp(x − m) summed (3), exp(x − m)/s (3): 7; log_softmax: 1 + 3 + (x − m −
# log s: 3) = 7. softmin is exported as softmax of the negated input: a negation kernel, then 7.
EXPECT = {"vector": A * B * C * (7 + 7 + 1 + 7)}
