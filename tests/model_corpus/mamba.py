"""Mamba (causal depthwise convolution, selective state-space scan) from a configuration alone: the
sequential path, as on a machine without its fused kernels."""

from _hf import hf_model, token_ids
from transformers import MambaConfig, MambaModel

CONFIG = {"vocab_size": 64, "hidden_size": 16, "state_size": 4, "num_hidden_layers": 1, "expand": 2,
          "conv_kernel": 4, "time_step_rank": 4}
Model = hf_model(MambaConfig, MambaModel, CONFIG, ["input_ids"], attention=None, use_cache=False)


def get_inputs() -> list:
    return token_ids(64)


def get_init_inputs() -> list:
    return []


EXPECT = {"tensor": "reference"}
