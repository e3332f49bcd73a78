"""KernelBench L1 96: smooth L1 (Huber) loss of two 32768 x 32768 f32 tensors, mean reduction."""
import torch

batch_size = 32768
width = 32768


class Model(torch.nn.Module):
    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.smooth_l1_loss(predictions, targets)


def get_inputs():
    return [torch.rand(batch_size, width), torch.rand(batch_size, width)]


def get_init_inputs():
    return []
