"""MaxPool1d, AvgPool1d, MaxPool3d, and MaxPool2d / AdaptiveMaxPool2d returning indices."""
import torch
import torch.nn.functional as F

N, C = 2, 3


class Model(torch.nn.Module):
    def forward(self, a, b, c):
        v, i = F.max_pool2d(c, 2, return_indices=True)
        av, ai = F.adaptive_max_pool2d(c, 3, return_indices=True)
        return F.max_pool1d(a, 3, stride=2), F.avg_pool1d(a, 2), F.max_pool3d(b, 2), v, i, av, ai


def get_inputs():
    return [torch.randn(N, C, 15), torch.randn(N, C, 4, 6, 4), torch.randn(N, C, 6, 6)]


def get_init_inputs():
    return []


# Per (n, c): max_pool1d 7 windows × 3 taps; avg_pool1d 7 × 2 adds + 7 divides; max_pool3d 12 windows × 8;
# max_pool2d with indices: 36 taps of max, then per tap the flat index (2p+r)·6 + (2q+s) (6 ops), a compare,
# a select and a min (9 × 36); adaptive_max_pool2d likewise, its flat index m·6 + n (5 × 36 + 36).
EXPECT = {"vector": N * C * (21 + 21 + 96 + (36 + 9 * 36) + (36 + 5 * 36))}
