"""nn.MultiheadAttention (batch_first, need_weights=False) with a causal float mask."""
import torch

B, L, D, HEADS = 2, 5, 16, 4


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(D, HEADS, batch_first=True)

    def forward(self, x):
        return self.mha(x, x, x, need_weights=False)[0]


def get_inputs():
    return [torch.randn(B, L, D)]


def get_init_inputs():
    return []


EXPECT = {"tensor": "counter"}
