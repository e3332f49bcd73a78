"""torch.fmod on integers: the lowering table has fmod, but rejects this configuration (a LoweringError), so
hybrid mode makes it a hole as it does an op without a lowering (tests/unit/test_llm_translate.py)."""
import torch


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.fmod(x, y) * 3


def get_inputs() -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return [torch.randint(-20, 20, (4, 6), generator=g), torch.randint(1, 5, (4, 6), generator=g)]


def get_init_inputs() -> list[object]:
    return []
