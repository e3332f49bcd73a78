"""A ResNet basic block with a strided 1x1 downsample shortcut."""
import torch
import torch.nn as nn

B, CIN, COUT, S = 2, 8, 16, 10


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(CIN, COUT, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(COUT)
        self.conv2 = nn.Conv2d(COUT, COUT, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(COUT)
        self.down = nn.Sequential(nn.Conv2d(CIN, COUT, 1, stride=2, bias=False), nn.BatchNorm2d(COUT))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + self.down(x))


def get_inputs():
    return [torch.randn(B, CIN, S, S)]


def get_init_inputs():
    return []


def taps(size: int, out: int, stride: int) -> int:
    return sum(1 for p in range(out) for r in range(3) if 0 <= p * stride + r - 1 < size)


HALF = S // 2
EXPECT = {"tensor": 2 * B * COUT * CIN * taps(S, HALF, 2) ** 2 + 2 * B * COUT * COUT * taps(HALF, HALF, 1) ** 2
          + 2 * B * COUT * CIN * HALF * HALF,
          # three batch norms in training mode (batch statistics: 9 per element; per channel the mean, rstd
          # and the running statistics' update, 15; the batch counter, 1), the residual add and two ReLUs
          "vector": 3 * (9 * B * COUT * HALF * HALF + 15 * COUT + 1) + B * COUT * HALF * HALF * (1 + 2)}
