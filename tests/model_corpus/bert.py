"""A BERT-like encoder: HuggingFace BertModel from a configuration alone, eager attention."""

import torch
from transformers import BertConfig, BertModel

CONFIG = {"vocab_size": 100, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
          "intermediate_size": 64, "max_position_embeddings": 32, "type_vocab_size": 2}
FULL = {"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
        "intermediate_size": 3072, "max_position_embeddings": 512, "type_vocab_size": 2}  # bert-base
BATCH, SEQ = 2, 8
FULL_INPUT = (8, 512)


class Model(torch.nn.Module):
    def __init__(self, config: dict | None = None) -> None:
        super().__init__()
        cfg = BertConfig(**(config or CONFIG))
        cfg._attn_implementation = "eager"
        self.bert = BertModel(cfg, add_pooling_layer=True)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.bert(input_ids=ids)
        return out.last_hidden_state, out.pooler_output


def get_inputs(shape: tuple[int, int] = (BATCH, SEQ), config: dict | None = None) -> list[torch.Tensor]:
    return [torch.randint(0, (config or CONFIG)["vocab_size"], shape)]


def get_init_inputs() -> list:
    return []


def expected_tensor_flops(c: dict, b: int, s: int) -> int:
    """2·MACs: q, k, v, o projections, the two MLP matmuls, attention scores and the value sum over all s²
    positions, and the pooler's dense layer on the first token."""
    h, i, layers = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    per_layer = b * s * (4 * h * h + 2 * h * i) + 2 * b * s * s * h
    return 2 * (layers * per_layer + b * h * h)


EXPECT = {"tensor": expected_tensor_flops(CONFIG, BATCH, SEQ)}
