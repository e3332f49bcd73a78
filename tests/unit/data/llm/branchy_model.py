"""Data-dependent control flow, which torch.export cannot trace: hybrid mode falls back to asking the model for
the whole program, whose interface then comes from an eager run (tests/unit/test_llm_translate.py)."""
import torch


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return x * 2.0
        return x - 1.0


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(3, 4)]


def get_init_inputs() -> list[object]:
    return []
