import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * (1.0 / (x.shape[0] * x.shape[1])) + x.shape[1] / 3


def get_inputs():
    return [torch.randn(16, 8)]


def get_init_inputs():
    return []
