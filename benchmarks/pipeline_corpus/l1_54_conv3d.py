"""A 3-D convolution, 3 -> 64 channels, kernel 3, on 64^3 volumes (the pattern and sizes of KernelBench L1 54)."""
import torch

batch_size, in_channels, out_channels, kernel_size, depth, width, height = 16, 3, 64, 3, 64, 64, 64


class Model(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv3d = torch.nn.Conv3d(in_channels, out_channels, (kernel_size,) * 3, bias=False)

    def forward(self, x):
        return self.conv3d(x)


def get_inputs():
    return [torch.rand(batch_size, in_channels, depth, width, height)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
