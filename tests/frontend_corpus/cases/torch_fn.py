"""A plain function for --entry: gelu(x @ w) with w made inside."""
import torch


def scaled_gelu(x):
    return torch.nn.functional.gelu(x * 2.0).sum(dim=-1)


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(x).softmax(dim=-1)
