"""A two-layer MLP with GELU."""
import torch

batch, dim, hidden = 16, 64, 128


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(dim, hidden)
        self.fc2 = torch.nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(torch.nn.functional.gelu(self.fc1(x)))


def get_inputs():
    return [torch.randn(batch, dim)]


def get_init_inputs():
    return []
