"""A suite vision transformer cutting patches with `img.unfold(2, p, p).unfold(3, p, p)`, then a linear patch
embedding, a class token and one encoder layer."""
import torch
from torch import nn

P, D = 4, 32


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(3 * P * P, D)
        self.cls = nn.Parameter(torch.zeros(1, 1, D))
        self.layer = nn.TransformerEncoderLayer(D, 4, 64, dropout=0.0, batch_first=True)

    def forward(self, img):
        b = img.shape[0]
        patches = img.unfold(2, P, P).unfold(3, P, P)  # b, 3, 4, 4, P, P
        patches = patches.permute(0, 2, 3, 1, 4, 5).reshape(b, -1, 3 * P * P)
        x = torch.cat([self.cls.expand(b, -1, -1), self.embed(patches)], dim=1)
        return self.layer(x)


def get_inputs():
    return [torch.randn(2, 3, 16, 16)]


def get_init_inputs():
    return []


# 2·MACs: the patch embedding (16 patches), q/k/v/o projections and the MLP on 17 tokens, scores and value sum.
T = 17
EXPECT = {"tensor": 2 * (2 * 16 * 3 * P * P * D + 2 * T * (4 * D * D + 2 * D * 64) + 2 * 2 * T * T * D)}
