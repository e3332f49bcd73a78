"""Two-layer MLP with tanh-approximated GELU and dropout, built in eval mode (dropout is the identity)."""
import torch

B, S, D, FF = 4, 6, 32, 64


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.Linear(D, FF)
        self.act = torch.nn.GELU(approximate="tanh")
        self.drop = torch.nn.Dropout(0.1)
        self.down = torch.nn.Linear(FF, D)
        self.eval()  # translated in the mode it is built in

    def forward(self, x):
        return self.down(self.drop(self.act(self.up(x))))


def get_inputs():
    return [torch.randn(B, S, D)]


def get_init_inputs():
    return []


# Bias adds, and GELU(tanh): 0.5·x·(1 + tanh(c·(x + 0.044715·x·x·x))) = 9 ops per element.
EXPECT = {"tensor": "counter", "vector": B * S * FF + B * S * D + 9 * B * S * FF}
