"""ConvTranspose3d with stride 2 (no padding) and bias."""
import torch

N, CIN, COUT, D = 1, 3, 2, 4


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.ConvTranspose3d(CIN, COUT, 3, stride=2)

    def forward(self, x):
        return self.up(x)


def get_inputs():
    return [torch.randn(N, CIN, D, D, D)]


def get_init_inputs():
    return []


OUT = (D - 1) * 2 + 3
EXPECT = {"tensor": 2 * N * CIN * COUT * D ** 3 * 27, "vector": N * COUT * OUT ** 3}
