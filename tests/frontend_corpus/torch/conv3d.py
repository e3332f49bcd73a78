"""Conv3d with stride 2 (no padding) and bias."""
import torch

N, CIN, COUT, D, H, W = 2, 3, 4, 7, 9, 8


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv3d(CIN, COUT, 3, stride=2)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(N, CIN, D, H, W)]


def get_init_inputs():
    return []


OUT = ((D - 3) // 2 + 1) * ((H - 3) // 2 + 1) * ((W - 3) // 2 + 1)
EXPECT = {"tensor": "counter", "vector": N * COUT * OUT}
