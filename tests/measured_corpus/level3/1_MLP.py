"""KernelBench L3 1: an MLP 16384 -> 16384 -> 16384 -> 8192 with ReLUs between, batch 128 (f32)."""
import torch

batch_size = 128
input_size = 16384
hidden = [16384, 16384]
output_size = 8192


class Model(torch.nn.Module):
    def __init__(self, n_in: int, widths: list, n_out: int) -> None:
        super().__init__()
        stack = []
        for width in widths:
            stack += [torch.nn.Linear(n_in, width), torch.nn.ReLU()]
            n_in = width
        stack.append(torch.nn.Linear(n_in, n_out))
        self.layers = torch.nn.Sequential(*stack)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def get_inputs():
    return [torch.rand(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden, output_size]
