"""A small CNN: conv-bn-relu-maxpool twice, adaptive average pool, flatten, linear, log_softmax."""
import torch
import torch.nn as nn

B, CLASSES = 4, 10


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, CLASSES)

    def forward(self, x):
        return torch.log_softmax(self.fc(torch.flatten(self.pool(self.features(x)), 1)), dim=1)


def get_inputs():
    return [torch.randn(B, 3, 16, 16)]


def get_init_inputs():
    return []


def taps(size: int) -> int:
    return sum(1 for p in range(size) for r in range(3) if 0 <= p + r - 1 < size)


# Padded 3x3 convolutions count only the taps inside the input (FlopCounterMode counts all 9).
EXPECT = {"tensor": 2 * B * 8 * 3 * taps(16) ** 2 + 2 * B * 16 * 8 * taps(8) ** 2 + 2 * B * CLASSES * 16}
