"""A ReLU on a large batch: the IR keeps BATCH = 4096, validation runs with BATCH = 2."""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(4096, 16)]


def get_init_inputs():
    return []
