"""A KernelBench-style problem for the lit tests: Linear → GELU → Linear on a batch of 64."""
import torch


class Model(torch.nn.Module):
    def __init__(self, d: int, h: int) -> None:
        super().__init__()
        self.up = torch.nn.Linear(d, h)
        self.down = torch.nn.Linear(h, d, bias=False)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


def get_inputs():
    return [torch.randn(64, 8)]


def get_init_inputs():
    return [8, 16]
