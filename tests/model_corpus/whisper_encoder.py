"""Whisper's audio encoder (two padded 1-D convolutions, then a transformer) from a configuration alone."""

import torch
from _hf import hf_model
from transformers import WhisperConfig
from transformers.models.whisper.modeling_whisper import WhisperEncoder

CONFIG = {"num_mel_bins": 8, "d_model": 32, "encoder_layers": 2, "encoder_attention_heads": 4,
          "encoder_ffn_dim": 64, "max_source_positions": 8}
Model = hf_model(WhisperConfig, WhisperEncoder, CONFIG, ["input_features"])


def get_inputs() -> list:
    return [torch.randn(2, 8, 16)]  # 2·max_source_positions frames: the stride-2 conv halves them


def get_init_inputs() -> list:
    return []


EXPECT = {"tensor": "reference"}
