"""A two-layer LSTM over 512 steps of 128 features (hidden 256), its last step through a linear layer."""
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, output_size):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size, output_size)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[:, -1, :])


def get_inputs():
    return [torch.rand(10, 512, 128)]


def get_init_inputs():
    return [128, 256, 2, 10]
