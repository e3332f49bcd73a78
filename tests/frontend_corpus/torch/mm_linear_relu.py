"""Linear layer + ReLU: aten.linear (bias add) then aten.relu."""
import torch

B, IN, OUT = 16, 64, 32


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(IN, OUT)

    def forward(self, x):
        return torch.relu(self.fc(x))


def get_inputs():
    return [torch.randn(B, IN)]


def get_init_inputs():
    return []


# bias add and ReLU: one op per output element each.
EXPECT = {"tensor": "counter", "vector": 2 * B * OUT}
