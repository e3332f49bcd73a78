"""Constants created in forward (lifted by export as `lifted_tensor_0`) and a plain tensor attribute."""

import torch


class Model(torch.nn.Module):
    def __init__(self, constant_value: float) -> None:
        super().__init__()
        self.constant_value = constant_value
        self.offset = torch.linspace(-1.0, 1.0, 16)  # neither parameter nor buffer: a constant attribute

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.min(x, torch.tensor(self.constant_value))
        return y * torch.tensor([2.0]) + self.offset


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(8, 16)]


def get_init_inputs() -> list[float]:
    return [0.5]
