"""Mistral with a sliding attention window shorter than the sequence, from a configuration alone."""

from _hf import hf_model, token_ids
from transformers import MistralConfig, MistralModel

CONFIG = {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
          "num_attention_heads": 4, "num_key_value_heads": 2, "sliding_window": 4, "max_position_embeddings": 32}
Model = hf_model(MistralConfig, MistralModel, CONFIG, ["input_ids"], use_cache=False)


def get_inputs() -> list:
    return token_ids(64)


def get_init_inputs() -> list:
    return []


EXPECT = {"tensor": "reference"}
