"""KernelBench L1 47: sum over dim 1 (kept) of a 128 x 4096 x 4095 f32 tensor."""
import torch

batch_size = 128
dim1 = 4096
dim2 = 4095


class Model(torch.nn.Module):
    def __init__(self, axis: int) -> None:
        super().__init__()
        self.axis = axis

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=self.axis, keepdim=True)


def get_inputs():
    return [torch.rand(batch_size, dim1, dim2)]


def get_init_inputs():
    return [1]
