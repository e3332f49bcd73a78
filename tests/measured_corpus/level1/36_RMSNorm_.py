"""KernelBench L1 36: x / sqrt(mean(x^2 over the channels) + eps), input 112x64x512x512."""
import torch

batch_size = 112
features = 64
dim1 = 512
dim2 = 512


class Model(torch.nn.Module):
    def __init__(self, channels: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.channels = channels
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean_square = (x * x).mean(dim=1, keepdim=True)
        return x / torch.sqrt(mean_square + self.eps)


def get_inputs():
    return [torch.rand(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features]
