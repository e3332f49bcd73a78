"""ConvTranspose1d, 512 -> 256 channels, kernel 4, stride 2, on 32 x 512 x 8192."""
import torch


class Model(torch.nn.Module):
    def __init__(self, cin, cout, k, stride):
        super().__init__()
        self.conv = torch.nn.ConvTranspose1d(cin, cout, k, stride=stride, padding=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(32, 512, 8192)]


def get_init_inputs():
    return [512, 256, 4, 2]
