"""A deep narrow MLP: 16 hidden layers of 1024 with ReLU (the pattern and sizes of KernelBench L3 3)."""
import torch

batch_size, input_size, hidden, layers, output_size = 1024, 8192, 1024, 16, 8192


class Model(torch.nn.Module):
    def __init__(self, input_size, hidden_layer_sizes, output_size):
        super().__init__()
        mods, current = [], input_size
        for h in hidden_layer_sizes:
            mods += [torch.nn.Linear(current, h), torch.nn.ReLU()]
            current = h
        mods.append(torch.nn.Linear(current, output_size))
        self.network = torch.nn.Sequential(*mods)

    def forward(self, x):
        return self.network(x)


def get_inputs():
    return [torch.rand(batch_size, input_size)]


def get_init_inputs():
    return [input_size, [hidden] * layers, output_size]
