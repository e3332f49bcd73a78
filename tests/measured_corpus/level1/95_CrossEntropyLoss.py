"""KernelBench L1 95: cross entropy of 32768 rows of 4096 logits (f32) against integer classes."""
import torch

batch_size = 32768
num_classes = 4096


class Model(torch.nn.Module):
    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(logits, labels)


def get_inputs():
    return [torch.rand(batch_size, num_classes), torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs():
    return []
