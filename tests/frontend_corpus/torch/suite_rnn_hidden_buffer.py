"""A suite RNN keeping its hidden state in a buffer with `self.hidden.copy_(initial_hidden)`, and a Python
float among the inputs (`get_inputs()` returns `[x, h0, 0.5]`)."""
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, n_in: int, n_hidden: int) -> None:
        super().__init__()
        self.register_buffer("hidden", torch.zeros(2, n_hidden))
        self.i2h = nn.Linear(n_in + n_hidden, n_hidden)

    def forward(self, x, initial_hidden, gain):
        self.hidden.copy_(initial_hidden)
        self.hidden = torch.tanh(self.i2h(torch.cat([x, self.hidden], dim=1))) * gain
        return self.hidden


def get_inputs():
    return [torch.randn(2, 8), torch.randn(2, 16), 0.5]


def get_init_inputs():
    return [8, 16]


EXPECT = {"tensor": "counter"}
