"""Half precision: f16 linear + softmax, bf16 LayerNorm and GELU (f32 accumulation inside kernels)."""
import torch

B, D = 4, 32


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(D, D).half()
        self.ln = torch.nn.LayerNorm(D).bfloat16()

    def forward(self, x, y):
        return torch.softmax(self.fc(x), dim=-1), torch.nn.functional.gelu(self.ln(y))


def get_inputs():
    return [torch.randn(B, D).half(), torch.randn(B, D).bfloat16()]


def get_init_inputs():
    return []


# fc: contraction, plus the bias add; softmax 7 per element; LayerNorm 9·D + 4 per row; gelu 5.
EXPECT = {"tensor": 2 * B * D * D, "vector": B * D + 7 * B * D + B * (9 * D + 4) + 5 * B * D}
