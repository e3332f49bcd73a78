"""ResNet (bottleneck blocks, batch norm, padded convolutions and max pooling) from a configuration alone."""

import torch
from _hf import hf_model
from transformers import ResNetConfig, ResNetModel

CONFIG = {"embedding_size": 8, "hidden_sizes": [8, 16], "depths": [1, 1], "layer_type": "bottleneck"}
Model = hf_model(ResNetConfig, ResNetModel, CONFIG, ["pixel_values"], attention=None)


def get_inputs() -> list:
    return [torch.randn(2, 3, 32, 32)]


def get_init_inputs() -> list:
    return []


EXPECT = {"tensor": "reference"}
