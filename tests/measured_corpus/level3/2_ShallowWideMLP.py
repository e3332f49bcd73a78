"""KernelBench L3 2: an MLP 16384 -> 32768 -> 32768 -> 16384 with ReLUs between, batch 64 (f32)."""
import torch

batch_size = 64
input_size = 16384
hidden = [32768, 32768]
output_size = 16384


class Model(torch.nn.Module):
    def __init__(self, n_in: int, widths: list, n_out: int) -> None:
        super().__init__()
        layers = []
        for width in widths:
            layers.append(torch.nn.Linear(n_in, width))
            layers.append(torch.nn.ReLU())
            n_in = width
        layers.append(torch.nn.Linear(n_in, n_out))
        self.mlp = torch.nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp(x)


def get_inputs():
    return [torch.rand(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden, output_size]
