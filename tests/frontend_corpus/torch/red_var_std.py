"""var (unbiased), std (correction 0) and var_mean."""
import torch

R, C = 6, 10


class Model(torch.nn.Module):
    def forward(self, x):
        v, m = torch.var_mean(x, dim=-1)
        return torch.var(x, dim=1), torch.std(x, dim=0, correction=0), v, m


def get_inputs():
    return [torch.randn(R, C) * 2 + 1]


def get_init_inputs():
    return []

# Per row of n: sum (n), mean (1), squared deviations (x − m)·(x − m) summed (4n), divide (1), sqrt for
# std (1).
EXPECT = {"vector": R * (5 * C + 2) + C * (5 * R + 3) + R * (5 * C + 2)}
