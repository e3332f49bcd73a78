"""Three ops without a lowering (mode, nanmedian, histc) and one that decomposes into supported ops (logaddexp):
the translation must name all three unsupported ops, each with its line, in one report."""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        a = torch.mode(x, dim=1)[0]
        b = torch.nanmedian(x, dim=1)[0]
        c = torch.logaddexp(x, x)
        return a.sum() + b.sum() + c.sum(), torch.histc(x, 4)


def get_inputs():
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
