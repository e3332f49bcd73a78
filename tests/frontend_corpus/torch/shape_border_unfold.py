"""Reflect, replicate and circular padding (1d-3d), `Tensor.unfold` (patches, overlapping windows) and roll
of the flattened tensor: copies and views, no arithmetic."""
import torch
import torch.nn.functional as F

B = 2


class Model(torch.nn.Module):
    def forward(self, x, s, v, r):
        patches = x.unfold(2, 2, 2).unfold(3, 2, 2)  # a ViT cutting 2x2 patches
        windows = s.unfold(2, 3, 1)
        return (F.pad(x, (1, 2, 2, 1), mode="reflect"), F.pad(x, (3, 0, 1, 1), mode="replicate"),
                F.pad(x, (1, 1, 2, 2), mode="circular"), F.pad(s, (2, 1), mode="reflect"),
                F.pad(v, (1, 1, 1, 1, 1, 1), mode="replicate"), patches, windows, torch.roll(r, 4))


def get_inputs():
    return [torch.randn(B, 3, 4, 6), torch.randn(B, 3, 5), torch.randn(B, 2, 3, 3, 3), torch.randn(3, 5)]


def get_init_inputs():
    return []


# Padding copies elements; unfold is a view (slices, reshape, permute, concat); roll is a view too.
EXPECT = {"vector": 0, "tensor": 0}
