"""DeBERTa-v2 (disentangled relative-position attention) from a configuration alone."""

from _hf import hf_model, token_ids
from transformers import DebertaV2Config, DebertaV2Model

CONFIG = {"vocab_size": 64, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
          "intermediate_size": 64, "max_position_embeddings": 32, "relative_attention": True,
          "position_buckets": 8, "pos_att_type": ["p2c", "c2p"], "max_relative_positions": 16}
Model = hf_model(DebertaV2Config, DebertaV2Model, CONFIG, ["input_ids"], attention=None)


def get_inputs() -> list:
    return token_ids(64)


def get_init_inputs() -> list:
    return []


EXPECT = {"tensor": "reference"}
