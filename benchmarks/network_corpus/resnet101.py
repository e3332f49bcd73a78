"""A ResNet-101 as KernelBench L3 builds it: a 7x7 stem, four stages of 3, 4, 23 and 3 bottleneck blocks
(1x1, 3x3 and 1x1 convolutions with BN, in-place ReLU, the shortcut added in place, expansion 4), pooling
and a classifier."""
import torch
from torch import nn


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = 4 * width
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2, self.bn2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        out += x if self.shortcut is None else self.shortcut(x)
        return self.relu(out)


class Model(nn.Module):
    def __init__(self, layers=(3, 4, 23, 3), num_classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], 64
        for stage, (count, width) in enumerate(zip(layers, (64, 128, 256, 512), strict=True)):
            for k in range(count):
                blocks.append(Bottleneck(cin, width, 2 if stage > 0 and k == 0 else 1))
                cin = 4 * width
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, (1, 1)), 1))


def get_inputs():
    return [torch.rand(10, 3, 224, 224)]


def get_init_inputs():
    return [[3, 4, 23, 3], 1000]
