"""KernelBench L1 97 as timed: scaled dot-product attention in float16, batch 32, 32 heads, 512 tokens,
head dimension 1024."""
import torch

batch_size = 32
num_heads = 32
sequence_length = 512
embedding_dimension = 1024


class Model(torch.nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)


def get_inputs():
    shape = (batch_size, num_heads, sequence_length, embedding_dimension)
    return [torch.rand(shape, dtype=torch.float16) for _ in range(3)]


def get_init_inputs():
    return []
