"""Mistral with a sliding attention window shorter than the sequence, from a configuration alone."""

from _hf import dead_attention_macs, hf_model, token_ids
from transformers import MistralConfig, MistralModel

CONFIG = {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
          "num_attention_heads": 4, "num_key_value_heads": 2, "sliding_window": 4, "max_position_embeddings": 32}
Model = hf_model(MistralConfig, MistralModel, CONFIG, ["input_ids"], use_cache=False)


def get_inputs() -> list:
    return token_ids(64)


def get_init_inputs() -> list:
    return []


# Sliding-window causal attention (window 4): the live pairs only (batch 2, 4 heads of 8, 8 tokens).
EXPECT = {"tensor": ("reference", -dead_attention_macs(2, 4, 8, 8, window=4))}
