"""Multi-head latent attention (DeepSeek-V2/V3) in solar-llm: what its cache holds.

Hugging Face's DeepSeek attention caches the latent, not the keys and values: per layer and token, the
normalised `kv_lora_rank` latent (the cache's "keys", one head wide) and the `qk_rope_head_dim` rotated key
shared by every head (its "values"), and expands them through `kv_b_proj` at every step. So a decode step's
cache inputs are `[B, 1, P, kv_lora_rank]` and `[B, 1, P, qk_rope_head_dim]`, and the KV-cache figure is
`layers · (kv_lora_rank + qk_rope_head_dim) · dtype bytes` per token (31,104 B for DeepSeek-V2-Lite in bf16,
against 276,480 B for expanded keys and values)."""

from __future__ import annotations

from typing import Any

# The model types whose HF attention caches the latent (read in their modeling code).
LATENT_CACHE_TYPES = ("deepseek_v2", "deepseek_v3")


def latent_widths(config: Any) -> tuple[int, int] | None:
    """(latent width, rotary key width) of an MLA config whose cache holds the latent, else None."""
    rank, rope = getattr(config, "kv_lora_rank", None), getattr(config, "qk_rope_head_dim", None)
    if getattr(config, "model_type", None) not in LATENT_CACHE_TYPES or not isinstance(rank, int) \
            or not isinstance(rope, int) or rank <= 0 or rope <= 0:
        return None
    return rank, rope


def cache_dims(config: Any, kv_heads: int, head_dim: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """(heads, width) of one layer's cached keys and of its values."""
    latent = latent_widths(config)
    if latent is None:
        return (kv_heads, head_dim), (kv_heads, head_dim)
    return (1, latent[0]), (1, latent[1])


def latent_token_bytes(config: Any, layers: int, dtype_bytes: int) -> int | None:
    """Bytes one token adds to the cache over every layer, for a latent cache; else None."""
    latent = latent_widths(config)
    return None if latent is None else layers * (latent[0] + latent[1]) * dtype_bytes
