"""A DenseNet (growth 32): a stem, three dense blocks of six layers (BN, ReLU, 1x1 and 3x3 convolutions, each
concatenated to its input) with transitions between, pooling and a classifier."""
import torch
from torch import nn


class DenseLayer(nn.Module):
    def __init__(self, cin, growth):
        super().__init__()
        self.body = nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(), nn.Conv2d(cin, 4 * growth, 1, bias=False),
                                  nn.BatchNorm2d(4 * growth), nn.ReLU(),
                                  nn.Conv2d(4 * growth, growth, 3, padding=1, bias=False))

    def forward(self, x):
        return torch.cat([x, self.body(x)], 1)


class Model(nn.Module):
    def __init__(self, growth=32, num_classes=1000):
        super().__init__()
        layers, c = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)], 64
        for block in range(3):
            for _ in range(6):
                layers.append(DenseLayer(c, growth))
                c += growth
            if block < 2:
                layers += [nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, c // 2, 1, bias=False), nn.AvgPool2d(2, 2)]
                c //= 2
        self.features = nn.Sequential(*layers, nn.BatchNorm2d(c), nn.ReLU())
        self.fc = nn.Linear(c, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(self.features(x), 1), 1))


def get_inputs():
    return [torch.rand(10, 3, 224, 224)]


def get_init_inputs():
    return [32, 1000]
