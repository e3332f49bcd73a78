"""Conv1d, 256 -> 512 channels, kernel 3, over 32 sequences of 16384."""
import torch


class Model(torch.nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.conv = torch.nn.Conv1d(cin, cout, k, padding=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(32, 256, 16384)]


def get_init_inputs():
    return [256, 512, 3]
