"""KernelBench L1 88: the tanh approximation of GELU written out (minGPT's NewGELU), 8192 x 8192 f32."""
import math

import torch

batch_size = 8192
dim = 8192


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))
        return 0.5 * x * (1.0 + torch.tanh(inner))


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
