"""Conv3d, 128 -> 256 channels, 3x3x3, on 8 x 128 x 32 x 64 x 64."""
import torch


class Model(torch.nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.conv = torch.nn.Conv3d(cin, cout, k)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(8, 128, 32, 64, 64)]


def get_init_inputs():
    return [128, 256, 3]
