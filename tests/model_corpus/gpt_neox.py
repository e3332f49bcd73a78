"""GPT-NeoX (parallel attention and MLP, partial rotary embeddings) from a configuration alone."""

from _hf import dead_attention_macs, hf_model, token_ids
from transformers import GPTNeoXConfig, GPTNeoXModel

CONFIG = {"vocab_size": 64, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
          "intermediate_size": 64, "rotary_pct": 0.5, "max_position_embeddings": 32}
Model = hf_model(GPTNeoXConfig, GPTNeoXModel, CONFIG, ["input_ids"], use_cache=False)


def get_inputs() -> list:
    return token_ids(64)


def get_init_inputs() -> list:
    return []


# Causal attention: the live pairs only (2 layers, batch 2, 4 heads of 8, 8 tokens).
EXPECT = {"tensor": ("reference", -dead_attention_macs(2, 4, 8, 8, layers=2))}
