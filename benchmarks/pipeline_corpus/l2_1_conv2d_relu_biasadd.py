"""A 2-D convolution, a ReLU and a per-channel bias (the pattern and sizes of KernelBench L2 1)."""
import torch

batch_size, in_channels, out_channels, height, width, kernel_size = 128, 64, 128, 128, 128, 3


class Model(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = torch.nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = torch.nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return torch.relu(self.conv(x)) + self.bias


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, (out_channels, 1, 1)]
