"""KernelBench L1 98: kl_div(log(p), q, batchmean) over 16384 rows of 16384 probabilities (f32)."""
import torch

batch_size = 16384
width = 16384


class Model(torch.nn.Module):
    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.kl_div(predictions.log(), targets, reduction="batchmean")


def get_inputs():
    return [torch.rand(batch_size, width).softmax(-1), torch.rand(batch_size, width).softmax(-1)]


def get_init_inputs():
    return []
