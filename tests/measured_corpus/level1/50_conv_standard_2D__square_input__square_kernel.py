"""KernelBench L1 50: AlexNet's first convolution (3 -> 96 channels, 11x11, stride 4, padding 2), batch 256,
224x224."""
import torch

batch_size = 256


class Model(torch.nn.Module):
    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 96, kernel_size=11, stride=4, padding=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.rand(batch_size, 3, 224, 224)]


def get_init_inputs():
    return [1000]
