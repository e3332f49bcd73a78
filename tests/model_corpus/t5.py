"""T5 (encoder and decoder, relative position buckets) from a configuration alone."""

from _hf import dead_attention_macs, hf_model, token_ids
from transformers import T5Config, T5Model

CONFIG = {"vocab_size": 64, "d_model": 32, "d_kv": 8, "d_ff": 64, "num_layers": 1, "num_decoder_layers": 1,
          "num_heads": 4, "relative_attention_num_buckets": 8, "relative_attention_max_distance": 16}
Model = hf_model(T5Config, T5Model, CONFIG, ["input_ids", "decoder_input_ids"], use_cache=False)


def get_inputs() -> list:
    return token_ids(64) + token_ids(64, seq=4)


def get_init_inputs() -> list:
    return []


# The decoder's causal self-attention: the live pairs only (batch 2, 4 heads of d_kv 8, 4 tokens).
EXPECT = {"tensor": ("reference", -dead_attention_macs(2, 4, 8, 4))}
