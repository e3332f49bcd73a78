"""KernelBench L1 2: (M, K) @ (K, N) in f32, M = 2048, K = 8192, N = 4096."""
import torch

M = 2048
K = 8192
N = 4096


class Model(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def get_inputs():
    return [torch.rand(M, K), torch.rand(K, N)]


def get_init_inputs():
    return []
