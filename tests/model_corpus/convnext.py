"""ConvNeXt (7x7 depthwise convolutions, channel-last layer norm, layer scale) from a configuration alone."""

import torch
from _hf import hf_model
from transformers import ConvNextConfig, ConvNextModel

CONFIG = {"num_channels": 3, "num_stages": 2, "hidden_sizes": [8, 16], "depths": [1, 1], "patch_size": 4}
Model = hf_model(ConvNextConfig, ConvNextModel, CONFIG, ["pixel_values"], attention=None)


def get_inputs() -> list:
    return [torch.randn(2, 3, 32, 32)]


def get_init_inputs() -> list:
    return []


EXPECT = {"tensor": "reference"}
