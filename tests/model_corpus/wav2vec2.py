"""wav2vec2 (a strided 1-D convolution feature encoder, a grouped positional convolution, a transformer) from
a configuration alone."""

import torch
from _hf import hf_model
from transformers import Wav2Vec2Config, Wav2Vec2Model

CONFIG = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64,
          "conv_dim": [16, 16], "conv_stride": [5, 2], "conv_kernel": [10, 3], "num_conv_pos_embeddings": 8,
          "num_conv_pos_embedding_groups": 4, "do_stable_layer_norm": False}
Model = hf_model(Wav2Vec2Config, Wav2Vec2Model, CONFIG, ["input_values"])


def get_inputs() -> list:
    return [torch.randn(2, 200)]


def get_init_inputs() -> list:
    return []


# The positional convolution's weight norm sums its weight's squares: a contraction by docs/counts.md (32
# filters of 8 channels by 8 taps), which FlopCounterMode does not count.
EXPECT = {"tensor": ("reference", 32 * 8 * 8)}
