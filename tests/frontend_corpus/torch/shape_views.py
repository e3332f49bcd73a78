"""view, reshape, permute, transpose, flatten, unsqueeze, squeeze, expand, contiguous: no arithmetic."""
import torch

B, C, H, W = 2, 3, 4, 5


class Model(torch.nn.Module):
    def forward(self, x, v):
        a = x.view(B, C, H * W).transpose(1, 2).contiguous()
        b = x.permute(0, 2, 3, 1).reshape(B, -1)
        c = torch.flatten(x, 1).unsqueeze(1).squeeze(1)
        d = v.unsqueeze(0).expand(B, -1)
        e = x.mT
        return a, b, c, d + 1.0, e


def get_inputs():
    return [torch.randn(B, C, H, W), torch.randn(7)]


def get_init_inputs():
    return []


# Only d + 1.0 computes.
EXPECT = {"vector": B * 7}
