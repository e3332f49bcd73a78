"""Reformer named by its Hugging Face id: its LSH attention sorts the tokens into buckets by their values,
which no single program for all inputs can express (KernelBench level 4 problems 13 and 15)."""

import torch
from transformers import AutoConfig, AutoModelForCausalLM

MODEL_ID = "solar-test/tiny-reformer"
config = AutoConfig.from_pretrained(MODEL_ID)
batch = 2
tokens = 32


class Model(torch.nn.Module):
    def __init__(self, model_id, model_config):
        super().__init__()
        self.lm = AutoModelForCausalLM.from_pretrained(model_id, config=model_config)

    def forward(self, ids):
        return self.lm(ids).logits


def get_inputs():
    return [torch.randint(0, config.vocab_size, (batch, tokens))]


def get_init_inputs():
    return [MODEL_ID, config]
