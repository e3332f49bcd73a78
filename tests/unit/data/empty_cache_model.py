"""A KV cache that starts empty, as HF's DynamicCache does: the first append is `cat([tensor([]), k])`."""

import torch


class Model(torch.nn.Module):
    def forward(self, k: torch.Tensor) -> torch.Tensor:
        cache = torch.tensor([], dtype=k.dtype, device=k.device)
        return torch.cat([cache, k], dim=-2) * 2.0


def get_inputs():
    return [torch.randn(2, 3, 5, 4)]


def get_init_inputs():
    return []
