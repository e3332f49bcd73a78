"""KernelBench L1 94: mean squared error of two 32768 x 32768 f32 tensors."""
import torch

batch_size = 32768
width = 32768


class Model(torch.nn.Module):
    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        diff = predictions - targets
        return (diff ** 2).mean()


def get_inputs():
    return [torch.rand(batch_size, width), torch.rand(batch_size, width)]


def get_init_inputs():
    return []
