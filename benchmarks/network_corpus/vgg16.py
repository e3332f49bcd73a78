"""A VGG-16: thirteen 3x3 convolutions with ReLUs in five stages, max pooling, three fully connected layers."""
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        layers, cin = [], 3
        for stage in ((64, 64), (128, 128), (256, 256, 256), (512, 512, 512), (512, 512, 512)):
            for cout in stage:
                layers += [nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU()]
                cin = cout
            layers.append(nn.MaxPool2d(2, 2))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Linear(512 * 7 * 7, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
                                        nn.Linear(4096, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


def get_inputs():
    return [torch.rand(10, 3, 224, 224)]


def get_init_inputs():
    return [1000]
