"""nll_loss after log_softmax, and cross_entropy with probability targets."""
import torch
import torch.nn.functional as F

B, C = 8, 6


class Model(torch.nn.Module):
    def forward(self, x, t, p):
        return F.nll_loss(F.log_softmax(x, dim=1), t), F.cross_entropy(x, p.softmax(dim=1))


def get_inputs():
    return [torch.randn(B, C), torch.randint(0, C, (B,)), torch.randn(B, C)]


def get_init_inputs():
    return []

# log_softmax and softmax: 7 per element. nll: compare-select-add per class (3C), per row the loss and
# weight selects and adds (7), one divide. Probability targets: max, Σ exp, lse (4C + 2), t·(lse − x)
# summed (3C), a row add, one divide.
EXPECT = {"vector": 2 * 7 * B * C + B * (3 * C + 7) + 1 + B * (7 * C + 3) + 1}
