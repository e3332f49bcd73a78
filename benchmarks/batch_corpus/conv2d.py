"""A 2-D convolution, 16 -> 128 channels, kernel 3, on 16 images of 1024 x 1024."""
import torch

batch_size, in_channels, out_channels, kernel_size, height, width = 16, 16, 128, 3, 1024, 1024


class Model(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = torch.nn.Conv2d(in_channels, out_channels, kernel_size, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
