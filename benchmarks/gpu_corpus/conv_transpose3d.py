"""ConvTranspose3d, 256 -> 128 channels, 3x3x3, stride 2, on 4 x 256 x 16 x 32 x 32."""
import torch


class Model(torch.nn.Module):
    def __init__(self, cin, cout, k, stride):
        super().__init__()
        self.conv = torch.nn.ConvTranspose3d(cin, cout, k, stride=stride)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(4, 256, 16, 32, 32)]


def get_init_inputs():
    return [256, 128, 3, 2]
