"""Conv2d, 256 -> 256 channels, 3x3, padding 1, on 32 x 256 x 128 x 128."""
import torch


class Model(torch.nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.conv = torch.nn.Conv2d(cin, cout, k, padding=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(32, 256, 128, 128)]


def get_init_inputs():
    return [256, 256, 3]
