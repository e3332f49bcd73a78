"""KernelBench L1 19: ReLU over a 4096 x 393216 f32 tensor."""
import torch

batch_size = 4096
dim = 393216


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
