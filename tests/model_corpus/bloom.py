"""BLOOM from a configuration alone: ALiBi slopes from an int32 `arange` (issue 36)."""

from _hf import hf_model, token_ids
from transformers import BloomConfig, BloomModel

CONFIG = {"vocab_size": 64, "hidden_size": 32, "n_layer": 1, "n_head": 4}
Model = hf_model(BloomConfig, BloomModel, CONFIG, ["input_ids"], use_cache=False)


def get_inputs() -> list:
    return token_ids(64)


def get_init_inputs() -> list:
    return []


EXPECT = {"tensor": "reference"}
