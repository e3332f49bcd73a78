"""KernelBench L1 33: BatchNorm2d over 64 channels (training mode, batch statistics), input 64x64x512x512."""
import torch

batch_size = 64
features = 64
dim1 = 512
dim2 = 512


class Model(torch.nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.norm = torch.nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs():
    return [torch.rand(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features]
