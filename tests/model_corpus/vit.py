"""A vision transformer: HuggingFace ViTModel from a configuration alone (patch embedding convolution,
class token, position embeddings, pre-norm encoder), SDPA attention."""

import torch
from transformers import ViTConfig, ViTModel

CONFIG = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64,
          "image_size": 16, "patch_size": 4, "num_channels": 3}
FULL = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
        "image_size": 224, "patch_size": 16, "num_channels": 3}  # ViT-B/16
BATCH = 2
FULL_BATCH = 32


class Model(torch.nn.Module):
    def __init__(self, config: dict | None = None) -> None:
        super().__init__()
        cfg = ViTConfig(**(config or CONFIG))
        cfg._attn_implementation = "sdpa"
        self.vit = ViTModel(cfg, add_pooling_layer=False)

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.vit(pixel_values=pixels).last_hidden_state


def get_inputs(batch: int = BATCH, config: dict | None = None) -> list[torch.Tensor]:
    c = config or CONFIG
    return [torch.randn(batch, c["num_channels"], c["image_size"], c["image_size"])]


def get_init_inputs() -> list:
    return []


def expected_tensor_flops(c: dict, b: int) -> int:
    """2·MACs: the patch embedding (a stride-p convolution: one MAC per pixel, channel and hidden unit),
    then per layer q, k, v, o projections, the MLP, and attention over the t = patches + 1 tokens."""
    h, i, layers = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    patches = (c["image_size"] // c["patch_size"]) ** 2
    t = patches + 1
    embed = b * c["num_channels"] * c["image_size"] ** 2 * h
    per_layer = b * t * (4 * h * h + 2 * h * i) + 2 * b * t * t * h
    return 2 * (embed + layers * per_layer)


EXPECT = {"tensor": expected_tensor_flops(CONFIG, BATCH)}
