"""CLIP's vision tower (patch convolution, class token, pre-norm transformer) from a configuration alone."""

import torch
from _hf import hf_model
from transformers import CLIPVisionConfig, CLIPVisionModel

CONFIG = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
          "image_size": 16, "patch_size": 4}
Model = hf_model(CLIPVisionConfig, CLIPVisionModel, CONFIG, ["pixel_values"])


def get_inputs() -> list:
    return [torch.randn(2, 3, 16, 16)]


def get_init_inputs() -> list:
    return []


EXPECT = {"tensor": "reference"}
