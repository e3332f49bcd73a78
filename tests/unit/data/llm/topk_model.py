"""A linear layer, a ReLU, then torch.topk, which the lowering table does not cover: hybrid mode asks the
model for topk alone (tests/unit/test_llm_*.py)."""
import torch


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc(x))
        top = torch.topk(h, 2, dim=1)[0]
        return top * 2.0


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(4, 8)]


def get_init_inputs() -> list[object]:
    return []
