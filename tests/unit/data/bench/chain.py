"""An element-wise chain whose intermediate is as large as its input: relu, then scale (size it with N)."""
import torch

N = 1024


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2.0


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []
