"""A bf16 linear layer (f32 accumulation) and nn.Bilinear in f32."""
import torch

B, IN, OUT = 8, 32, 16


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(IN, OUT, dtype=torch.bfloat16)
        self.bil = torch.nn.Bilinear(IN, 12, OUT)

    def forward(self, x, y, z):
        return self.fc(x), self.bil(y, z)


def get_inputs():
    return [torch.randn(B, IN, dtype=torch.bfloat16), torch.randn(B, IN), torch.randn(B, 12)]


def get_init_inputs():
    return []


# fc: tensor contraction 2·B·OUT·IN plus the bias add; bilinear: x·W·y, a three-operand product per point.
EXPECT = {"tensor": 2 * B * OUT * IN}
