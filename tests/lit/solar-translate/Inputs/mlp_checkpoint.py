# A 3-layer MLP whose middle block runs under torch.utils.checkpoint: its hidden activation (BATCH x 48) is
# not saved for the backward but recomputed from the block's input.
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

BATCH = 24


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 48, bias=False)
        self.fc2 = nn.Linear(48, 32, bias=False)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(32, 32, bias=False)
        self.block = Block()
        self.out = nn.Linear(32, 16, bias=False)

    def forward(self, x):
        h = checkpoint(self.block, self.inp(x), use_reentrant=False)
        return self.out(h)


def get_inputs():
    return [torch.randn(BATCH, 32)]


def get_init_inputs():
    return []
