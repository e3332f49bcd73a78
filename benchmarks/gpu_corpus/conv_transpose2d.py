"""ConvTranspose2d, 512 -> 256 channels, 4x4, stride 2, on 16 x 512 x 64 x 64."""
import torch


class Model(torch.nn.Module):
    def __init__(self, cin, cout, k, stride):
        super().__init__()
        self.conv = torch.nn.ConvTranspose2d(cin, cout, k, stride=stride, padding=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(16, 512, 64, 64)]


def get_init_inputs():
    return [512, 256, 4, 2]
