"""KernelBench L2 12: Linear(8192 -> 8192) on a batch of 1024, times 2.0, then LeakyReLU(0.1)."""
import torch

batch_size = 1024
in_features = 8192
out_features = 8192


class Model(torch.nn.Module):
    def __init__(self, n_in: int, n_out: int, scale: float, slope: float) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(n_in, n_out)
        self.scale = scale
        self.slope = slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.leaky_relu(self.linear(x) * self.scale, self.slope)


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, 2.0, 0.1]
