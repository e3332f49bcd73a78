"""Qwen2-MoE (top-k routed experts beside a gated shared expert) from a configuration alone. Its experts run
as `batched_mm` (each token's k experts' weights gathered, then batched products); the default grouped
kernel is rewritten into the same products (tests/unit/test_llm_grouped_experts.py), and the eager loop
over the experts hit depends on the data."""

from _hf import dead_attention_macs, hf_model, token_ids
from transformers import Qwen2MoeConfig, Qwen2MoeModel

CONFIG = {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 64, "moe_intermediate_size": 16,
          "shared_expert_intermediate_size": 32, "num_experts": 4, "num_experts_per_tok": 2,
          "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
          "max_position_embeddings": 32, "experts_implementation": "batched_mm"}
Model = hf_model(Qwen2MoeConfig, Qwen2MoeModel, CONFIG, ["input_ids"], use_cache=False)


def get_inputs() -> list:
    return token_ids(64)


def get_init_inputs() -> list:
    return []


# Causal attention: the live pairs only (batch 2, 4 heads of 8, 8 tokens).
EXPECT = {"tensor": ("reference", -dead_attention_macs(2, 4, 8, 8))}
