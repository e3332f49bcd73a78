"""A MobileNetV2: inverted residual blocks (1x1 expansion, 3x3 depthwise, 1x1 projection, ReLU6), pooling and
a classifier."""
import torch
from torch import nn


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        self.residual = stride == 1 and cin == cout
        self.body = nn.Sequential(
            nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class Model(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        layers, cin = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU6()], 32
        for expand, cout, repeat, stride in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                                             (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)):
            for k in range(repeat):
                layers.append(InvertedResidual(cin, cout, stride if k == 0 else 1, expand))
                cin = cout
        layers += [nn.Conv2d(cin, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.ReLU6()]
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(1280, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(self.features(x), 1), 1))


def get_inputs():
    return [torch.rand(10, 3, 224, 224)]


def get_init_inputs():
    return [1000]
