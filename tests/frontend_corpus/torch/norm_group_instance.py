"""GroupNorm (4 groups) and InstanceNorm2d (affine)."""
import torch

N, C, H, W = 2, 8, 5, 6


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gn = torch.nn.GroupNorm(4, C)
        self.inorm = torch.nn.InstanceNorm2d(C, affine=True)

    def forward(self, x):
        return self.gn(x), self.inorm(x)


def get_inputs():
    return [torch.randn(N, C, H, W)]


def get_init_inputs():
    return []


GROUP = (C // 4) * H * W
EXPECT = {"vector": N * 4 * (9 * GROUP + 4) + N * C * (9 * H * W + 4)}
