"""KernelBench L1 40: LayerNorm over the last three dims (64, 256, 256), batch 16."""
import torch

batch_size = 16
features = 64
dim1 = 256
dim2 = 256


class Model(torch.nn.Module):
    def __init__(self, shape: tuple) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs():
    return [torch.rand(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [(features, dim1, dim2)]
