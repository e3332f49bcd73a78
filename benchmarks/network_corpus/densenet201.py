"""A DenseNet-201 as KernelBench L3 builds it (growth 32): a stem, dense blocks of 6, 12, 48 and 32 layers
(each BN, in-place ReLU, a 3x3 convolution and a dropout of 0, its output concatenated to every feature
before it), transitions (BN, ReLU, 1x1 convolution halving the channels, 2x2 average pooling) between them,
a last BN and ReLU, pooling and a 10-way classifier."""
import torch
from torch import nn
from torch.nn import functional as F


class DenseBlock(nn.Module):
    def __init__(self, layers, cin, growth):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.Sequential(nn.BatchNorm2d(cin + k * growth), nn.ReLU(inplace=True),
                          nn.Conv2d(cin + k * growth, growth, 3, padding=1, bias=False), nn.Dropout(0.0))
            for k in range(layers))

    def forward(self, x):
        features = [x]
        for layer in self.layers:
            features.append(layer(x))
            x = torch.cat(features, 1)
        return x


def transition(cin, cout):
    return nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(inplace=True), nn.Conv2d(cin, cout, 1, bias=False),
                         nn.AvgPool2d(2, 2))


class Model(nn.Module):
    def __init__(self, growth=32, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        blocks, transitions, c = [], [], 64
        for k, layers in enumerate((6, 12, 48, 32)):
            blocks.append(DenseBlock(layers, c, growth))
            c += layers * growth
            if k < 3:
                transitions.append(transition(c, c // 2))
                c //= 2
        self.blocks, self.transitions = nn.ModuleList(blocks), nn.ModuleList(transitions)
        self.last_bn = nn.BatchNorm2d(c)
        self.fc = nn.Linear(c, num_classes)

    def forward(self, x):
        x = self.stem(x)
        for k, block in enumerate(self.blocks):
            x = block(x)
            if k < len(self.transitions):
                x = self.transitions[k](x)
        x = F.relu(self.last_bn(x), inplace=True)
        return self.fc(F.adaptive_avg_pool2d(x, (1, 1)).view(x.size(0), -1))


def get_inputs():
    return [torch.rand(10, 3, 224, 224)]


def get_init_inputs():
    return [32, 10]
