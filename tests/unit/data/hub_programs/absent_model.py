"""Names a model whose config.json is in no cache (and the hub may not be asked)."""

import torch
from transformers import AutoModel


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = AutoModel.from_pretrained("solar-test/no-such-model")

    def forward(self, ids):
        return self.encoder(ids).last_hidden_state


def get_inputs():
    return [torch.randint(0, 10, (2, 8))]


def get_init_inputs():
    return []
