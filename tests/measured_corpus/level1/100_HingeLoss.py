"""KernelBench L1 100: mean(clamp(1 - p * y, min=0)), p of 32768 x 32768 (f32), labels y of 32768 broadcast
along the last dimension."""
import torch

batch_size = 32768
width = 32768


class Model(torch.nn.Module):
    def forward(self, predictions: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return torch.clamp(1 - predictions * labels, min=0).mean()


def get_inputs():
    labels = torch.randint(0, 2, (batch_size,)).float() * 2 - 1
    return [torch.rand(batch_size, width), labels]


def get_init_inputs():
    return []
