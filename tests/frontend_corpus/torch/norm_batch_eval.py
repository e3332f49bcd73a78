"""BatchNorm2d in inference mode (running statistics; the model is built in eval mode) after a Conv2d, then
ReLU."""
import torch

N, C, H, W = 2, 6, 7, 7


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, C, 1, bias=False)
        self.bn = torch.nn.BatchNorm2d(C)
        # Non-trivial running statistics, so that validation checks them.
        self.bn.running_mean.uniform_(-1, 1)
        self.bn.running_var.uniform_(0.5, 2)
        self.eval()  # translated in the mode it is built in

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(N, 3, H, W)]


def get_init_inputs():
    return []


# (x − mean)·rsqrt(var + eps)·w + b: 6 ops per element; ReLU 1.
EXPECT = {"tensor": "counter", "vector": 7 * N * C * H * W}
