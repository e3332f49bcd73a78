"""An MLP 16384 -> 32768 -> 32768 -> 16384 with ReLUs, on 128 rows (the pattern and sizes of KernelBench L3 1)."""
import torch

batch_size, input_size, layer_sizes, output_size = 128, 16384, [32768, 32768], 16384


class Model(torch.nn.Module):
    def __init__(self, input_size, layer_sizes, output_size):
        super().__init__()
        layers, current = [], input_size
        for size in layer_sizes:
            layers += [torch.nn.Linear(current, size), torch.nn.ReLU()]
            current = size
        layers.append(torch.nn.Linear(current, output_size))
        self.network = torch.nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)


def get_inputs():
    return [torch.rand(batch_size, input_size)]


def get_init_inputs():
    return [input_size, layer_sizes, output_size]
