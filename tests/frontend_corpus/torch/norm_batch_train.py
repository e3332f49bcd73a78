"""BatchNorm2d in training mode, as a module is built (KernelBench runs its problems so): statistics over the
batch and the spatial positions, and the running statistics updated in place (new values as outputs)."""
import torch

N, C, H, W = 3, 5, 4, 6


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(2, C, 1, bias=False)
        self.bn = torch.nn.BatchNorm2d(C, momentum=0.25)
        # Non-trivial running statistics, so that validation checks their update.
        self.bn.running_mean.uniform_(-1, 1)
        self.bn.running_var.uniform_(0.5, 2)

    def forward(self, x):
        return self.bn(self.conv(x))


def get_inputs():
    return [torch.randn(N, 2, H, W)]


def get_init_inputs():
    return []


# Batch statistics: Σx (1), Σ(x − m)² (4) and the normalisation (x − m)·rs·w + b (4) per element; per channel
# the mean (1), rstd (3) and the running statistics (3 + 8); the batch counter (1).
EXPECT = {"tensor": 2 * N * C * 2 * H * W, "vector": 9 * N * C * H * W + 15 * C + 1}
