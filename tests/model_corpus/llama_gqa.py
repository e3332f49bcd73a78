"""A decoder-only language model with grouped-query attention and rotary embeddings: HuggingFace Llama built
from a configuration alone (no weights), SDPA attention, causal."""

import torch
from transformers import LlamaConfig, LlamaForCausalLM

# Small enough for the test suite; FULL is what benchmarks/coverage.py --full analyses (Llama-3.2-1B's shape).
CONFIG = {"vocab_size": 128, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64}
FULL = {"vocab_size": 128256, "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
        "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 4096}
BATCH, SEQ = 2, 16
FULL_INPUT = (1, 2048)


class Model(torch.nn.Module):
    def __init__(self, config: dict | None = None) -> None:
        super().__init__()
        cfg = LlamaConfig(**(config or CONFIG))
        cfg._attn_implementation = "sdpa"
        self.lm = LlamaForCausalLM(cfg)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.lm(input_ids=ids, use_cache=False).logits


def get_inputs(shape: tuple[int, int] = (BATCH, SEQ), config: dict | None = None) -> list[torch.Tensor]:
    return [torch.randint(0, (config or CONFIG)["vocab_size"], shape)]


def get_init_inputs() -> list:
    return []


def expected_tensor_flops(c: dict, b: int, s: int) -> int:
    """2·MACs of every contraction: q, k, v, o projections (k and v at the grouped width), the gated MLP,
    the LM head, and attention over the causal mask's live pairs (s·(s+1)/2 of the s² positions: transformers
    hands SDPA an explicit causal mask, and a bound counts only the pairs the mask keeps)."""
    h, i, layers, heads, kv = (c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"],
                               c["num_attention_heads"], c["num_key_value_heads"])
    d = h // heads
    proj = b * s * (h * h + 2 * h * kv * d + h * h)
    mlp = b * s * 3 * h * i
    attn = 2 * b * heads * d * (s * (s + 1) // 2)  # scores and the value sum, live pairs
    return 2 * (layers * (proj + mlp + attn) + b * s * h * c["vocab_size"])


EXPECT = {"tensor": expected_tensor_flops(CONFIG, BATCH, SEQ)}
