"""Phi-3 with a partial rotary factor of 1.0 from a configuration alone: the pass-through part of the rotary
split is an empty slice, joined back by `cat` (issue 36)."""

from _hf import dead_attention_macs, hf_model, token_ids
from transformers import Phi3Config, Phi3Model

CONFIG = {"vocab_size": 64, "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 4,
          "num_key_value_heads": 4, "intermediate_size": 64, "max_position_embeddings": 32,
          "partial_rotary_factor": 1.0, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}
Model = hf_model(Phi3Config, Phi3Model, CONFIG, ["input_ids"], use_cache=False)


def get_inputs() -> list:
    return token_ids(64)


def get_init_inputs() -> list:
    return []


# Causal attention: the live pairs only (batch 2, 4 heads of 8, 8 tokens).
EXPECT = {"tensor": ("reference", -dead_attention_macs(2, 4, 8, 8))}
