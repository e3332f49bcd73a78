"""Swin (shifted windows, the feature map padded to a multiple of the window) from a configuration alone."""

import torch
from _hf import hf_model
from transformers import SwinConfig, SwinModel

CONFIG = {"image_size": 24, "patch_size": 2, "embed_dim": 16, "depths": [2, 1], "num_heads": [2, 4],
          "window_size": 4}
Model = hf_model(SwinConfig, SwinModel, CONFIG, ["pixel_values"])


def get_inputs() -> list:
    return [torch.randn(2, 3, 24, 24)]  # a 12x12 patch grid, then 6x6: not multiples of the window


def get_init_inputs() -> list:
    return []


EXPECT = {"tensor": "reference"}
