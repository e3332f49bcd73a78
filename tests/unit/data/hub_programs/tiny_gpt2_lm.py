"""A language model named by its Hugging Face id, built in `Model.__init__` with `from_pretrained` as KernelBench
level 4 builds its models: the test's offline cache holds its config.json alone."""

import torch
from transformers import AutoConfig, AutoModelForCausalLM

MODEL_ID = "solar-test/tiny-gpt2"
config = AutoConfig.from_pretrained(MODEL_ID)
batch = 2
tokens = 16


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
