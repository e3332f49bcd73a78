"""solar-llm on the stock published `config.json` of each dense family, unedited (tests/unit/data/hf_configs): the
weights against the published parameter counts, and a decode step's MACs and bytes against closed forms at full
width on the meta device (the weights read, a one-layer model's, from the published count). Each family's step
is priced on a one-layer model of the config (one export, seconds): every layer is alike, and the scaling of
twins to the full depth is test_llm.py's."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("transformers")

from solar.backends.sweep import CostSurface
from solar.bench.llm_serving import _at, lifted, model_memory, price_phase, resident_cache_bytes
from solar.frontends.llm_families import repeating_twins
from solar.frontends.llm_models import LlmConfig, build_model, export_phase, load_config, weight_bytes
from solar.frontends.llm_validate import reduced_config
from solar.targets.loader import load_target

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
H100 = load_target("h100")
BATCH, CONTEXT = 3, 100


@dataclass(frozen=True)
class Family:
    config: str
    params: int  # the published parameter count
    layer_macs: Callable[[dict], int]  # one layer's projections per token, from the config's own fields
    lm_head: Callable[[dict], int]
    # Bytes a decode step reads beside the weights, the cache and the logits, per family: the embedding rows
    # it gathers (one: ids may repeat), position tables' rows, rotary frequencies (f32).
    extra_bytes: Callable[[dict, int], int]
    tied: bool = False  # the LM head is the embedding: read whole, no row apart
    # Parameters outside the layers beside the embedding and an untied LM head: the final norm (an RMSNorm's
    # weight unless said), position tables, embedding norms, the LM head's bias.
    outside: Callable[[dict], int] = lambda c: _hidden(c)


def _llama_layer(c: dict) -> int:
    h, heads, d = c["hidden_size"], c["num_attention_heads"], c.get("head_dim") or c["hidden_size"] // c[
        "num_attention_heads"]
    kv = c.get("num_key_value_heads") or heads
    return h * heads * d * 2 + 2 * h * kv * d + 3 * h * c["intermediate_size"]


def _hidden(c: dict) -> int:
    return c.get("hidden_size", c.get("n_embd", 0))


def _vocab_hidden(c: dict) -> int:
    return c["vocab_size"] * _hidden(c)


def _rotary_row(c: dict, rotated: int, dtype_bytes: int) -> int:
    """One embedding row and the rotary frequencies (f32) of `rotated` dimensions."""
    return c.get("hidden_size", c.get("n_embd", 0)) * dtype_bytes + rotated // 2 * 4


FAMILIES = {
    "llama-2-7b": Family("llama-2-7b.json", 6_738_415_616, _llama_layer, _vocab_hidden,
                         lambda c, b: _rotary_row(c, 128, b)),
    "llama-3.1-8b": Family("llama-3.1-8b.json", 8_030_261_248, _llama_layer, _vocab_hidden,
                           lambda c, b: _rotary_row(c, 128, b)),
    "qwen2-7b": Family("qwen2-7b.json", 7_615_616_512, _llama_layer, _vocab_hidden,
                       lambda c, b: _rotary_row(c, 128, b)),
    "qwen3-8b": Family("qwen3-8b.json", 8_190_735_360, _llama_layer, _vocab_hidden,
                       lambda c, b: _rotary_row(c, 128, b)),
    "phi-3-mini-4k": Family("phi-3-mini-4k.json", 3_821_079_552, _llama_layer, _vocab_hidden,
                            lambda c, b: _rotary_row(c, 96, b)),
    "opt-1.3b": Family("opt-1.3b.json", 1_315_758_080,
                       lambda c: 4 * c["hidden_size"] ** 2 + 2 * c["hidden_size"] * c["ffn_dim"], _vocab_hidden,
                       lambda c, b: c["hidden_size"] * b, tied=True,  # one learned position's row
                       # the final LayerNorm (weight, bias) and the position table (offset 2)
                       outside=lambda c: 2 * c["hidden_size"] + (c["max_position_embeddings"] + 2) * c["hidden_size"]),
    "pythia-1.4b": Family("pythia-1.4b.json", 1_414_647_808,
                          lambda c: 4 * c["hidden_size"] ** 2 + 2 * c["hidden_size"] * c["intermediate_size"],
                          _vocab_hidden, lambda c, b: _rotary_row(c, 32, b),  # rotary_pct 0.25 of 128
                          outside=lambda c: 2 * c["hidden_size"]),  # a LayerNorm: weight and bias
    "bloom-560m": Family("bloom-560m.json", 559_214_592, lambda c: 12 * c["hidden_size"] ** 2, _vocab_hidden,
                         lambda c, b: 0, tied=True,  # ALiBi's slopes are computed, not read
                         outside=lambda c: 4 * c["hidden_size"]),  # the embedding's LayerNorm and the final one
    "gpt-j-6b": Family("gpt-j-6b.json", 6_050_882_784, lambda c: 12 * c["n_embd"] ** 2, _vocab_hidden,
                       lambda c, b: c["n_embd"] * b + c["rotary_dim"] * 4,  # a row of the f32 sin/cos table
                       outside=lambda c: 2 * c["n_embd"] + c["vocab_size"]),  # the final LayerNorm, the head's bias
    "falcon-7b": Family("falcon-7b.json", 6_921_720_704,  # multi-query: one key-value head
                        lambda c: c["hidden_size"] * (c["hidden_size"] + 2 * 64) + 9 * c["hidden_size"] ** 2,
                        # the rotary frequencies; the keys' and values' head indices ([-2], [-1]: int64)
                        _vocab_hidden, lambda c, b: 64 // 2 * 4 + 2 * 8, tied=True,
                        outside=lambda c: 2 * c["hidden_size"]),
    # Grouped-query attention (8 key-value heads) that HF broadcasts to every head before its cache update:
    # the step keeps 8 (kv_broadcast). 65024·8192 + 60·(8192·(8192 + 2·8·64) + 9·8192² + 4·8192) + 2·8192.
    "falcon-40b": Family("falcon-40b.json", 41_303_293_952,
                         lambda c: c["hidden_size"] * (c["hidden_size"] + 2 * c["num_kv_heads"] * 64)
                         + 9 * c["hidden_size"] ** 2, _vocab_hidden, lambda c, b: 64 // 2 * 4 + 2 * 8, tied=True,
                         outside=lambda c: 2 * c["hidden_size"]),
    # Eager attention (soft-capping); the embedding's scale as Gemma-3's.
    "gemma-2-9b": Family("gemma-2-9b.json", 9_241_705_984, _llama_layer, _vocab_hidden,
                         lambda c, b: c["head_dim"] // 2 * 4 + b, tied=True),
    "gemma-3-1b": Family("gemma-3-1b.json", 999_885_952, _llama_layer, _vocab_hidden,  # and the embedding's scale
                         lambda c, b: c["head_dim"] // 2 * 4 + b, tied=True),
}


@functools.cache
def _family(name: str) -> tuple[LlmConfig, Family]:
    family = FAMILIES[name]
    return load_config(str(CONFIGS / family.config)), family


def _decode_one_layer(cfg: LlmConfig):
    exported = export_phase(cfg, "decode", 2, 64, 1)
    module, _ = lifted(exported.module)
    values = {exported.sizes["batch"]: BATCH, exported.sizes["context"]: CONTEXT}
    return _at(CostSurface(module, [H100]), values, "h100-sxm", "whole_graph")


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_stock_config_weights_and_decode_closed_form(name: str) -> None:
    cfg, family = _family(name)
    s, raw = cfg.shape, cfg.raw
    assert model_memory(cfg).weight_bytes == family.params * s.dtype_bytes
    # A one-layer model's weights from the published count: the parameters outside the layers, and one
    # layer's share of the rest (every layer holds the same parameters).
    outside = _vocab_hidden(raw) * (1 if family.tied else 2) + family.outside(raw)
    layer, rest = divmod(family.params - outside, s.layers)
    assert rest == 0
    one_layer = (outside + layer) * s.dtype_bytes
    assert weight_bytes(build_model(cfg.with_layers(1), s.dtype)) == one_layer
    cost = _decode_one_layer(cfg)
    attention = 2 * BATCH * s.heads * (CONTEXT + 1) * s.head_dim  # P + 1 keys per new token, Q·K and P·V
    assert cost.macs == BATCH * (family.layer_macs(raw) + family.lm_head(raw)) + attention
    kv_token = 2 * s.kv_heads * s.head_dim * s.dtype_bytes  # one layer's keys and values of one token
    embedding = 0 if family.tied else _vocab_hidden(raw) * s.dtype_bytes
    position_table = raw["max_position_embeddings"] + 2 if name.startswith("opt") else 0  # OPT's offset 2
    assert cost.bytes == (one_layer - embedding - position_table * s.hidden * s.dtype_bytes
                          + family.extra_bytes(raw, s.dtype_bytes) + BATCH * 8  # the token ids
                          + BATCH * CONTEXT * kv_token + BATCH * kv_token  # the cache read, the new token's
                          + BATCH * s.vocab * s.dtype_bytes)  # the last position's logits


def test_falcon_40b_cache_holds_its_kv_heads() -> None:
    """HF's Falcon-40B broadcasts its 8 key-value heads to all 128 query heads before the cache update; an
    engine keeps 8. The cache figure and the decode step's cache read and write are 8 heads': per token
    2 · 60 layers · 8 · 64 · 2 B = 122,880 B (HF's layout: 1,966,080 B)."""
    cfg, _ = _family("falcon-40b")
    s = cfg.shape
    assert (s.kv_heads, s.heads, s.head_dim, s.layers) == (8, 128, 64, 60)
    assert s.kv_bytes_per_token == 2 * 60 * 8 * 64 * 2 == 122_880
    exported = export_phase(cfg, "decode", 2, 64, 1)
    caches = [v for v in exported.module.entry.args if v.name.startswith("cache")]
    assert len(caches) == 2 and all(v.type.shape[1] == 8 for v in caches)
    assert resident_cache_bytes(cfg, model_memory(cfg), BATCH, CONTEXT + 1) == BATCH * (CONTEXT + 1) * 122_880


def _window_pairs(length: int, window: int) -> int:
    """Live query-key pairs of a causal sliding window: Σ_i min(i + 1, W)."""
    full = min(length, window)
    return full * (full + 1) // 2 + (length - full) * window


def test_gemma2_soft_capping_uses_eager_attention_and_counts_live_pairs() -> None:
    """Gemma-2 soft-caps its scores (a tanh between Q·Kᵀ and the softmax), which SDPA cannot: its eager
    attention is priced, and its mask's live pairs are all that Q·Kᵀ and P·V count, causal and sliding."""
    cfg, family = _family("gemma-2-9b")
    assert cfg.config._attn_implementation == "eager" and cfg.with_layers(1)._attn_implementation == "eager"
    s = cfg.shape
    exported = export_phase(cfg, "prefill", 2, 8192, 1)  # layer 0: a sliding layer of window 4096
    module, _ = lifted(exported.module)
    surface = CostSurface(module, [H100])
    for prompt in (5000, 8192):
        cost = _at(surface, {exported.sizes["batch"]: 1, exported.sizes["prompt"]: prompt}, "h100-sxm", "fused")
        attention = 2 * s.heads * _window_pairs(prompt, s.sliding_window) * s.head_dim
        assert cost.macs == prompt * family.layer_macs(cfg.raw) + family.lm_head(cfg.raw) + attention


def _structure(model) -> set[str]:
    """The model's parameter names, layer indices left out: its modules, whatever their sizes."""
    return {".".join(p for p in name.split(".") if not p.isdigit()) for name, _ in model.named_parameters()}


@pytest.mark.parametrize("name, shown", [
    ("opt-1.3b.json", "num_hidden_layers 24→2, vocab_size 50272→256, hidden_size 2048→32, num_attention_heads 32→2, "
                      "ffn_dim 8192→128, word_embed_proj_dim 2048→32"),
    ("opt-350m.json", "num_hidden_layers 24→2, vocab_size 50272→256, hidden_size 1024→32, num_attention_heads 16→2, "
                      "ffn_dim 4096→128, word_embed_proj_dim 512→16"),
    ("gpt-j-6b.json", "n_layer 28→2, vocab_size 50400→256, n_embd 4096→32, n_head 16→2, rotary_dim 64→4"),
    ("falcon-40b.json", "num_hidden_layers 60→2, vocab_size 65024→256, hidden_size 8192→512, "
                        "num_attention_heads 128→32, num_kv_heads 8→2, ffn_hidden_size 32768→2048"),
    ("deepseek-v2-lite.json", "num_hidden_layers 27→2, vocab_size 102400→256, hidden_size 2048→32, head_dim 64→8, "
                              "num_attention_heads 16→2, num_key_value_heads 16→2, intermediate_size 10944→171, "
                              "moe_intermediate_size 1408→96, qk_nope_head_dim 128→16, v_head_dim 128→16, "
                              "qk_rope_head_dim 64→8, kv_lora_rank 512→8"),
])
def test_reduced_twin_is_the_priced_structure(name: str, shown: str) -> None:
    """The validated twin has the modules of the priced model (OPT-1.3B's equal embedding width adds no
    projections; OPT-350M's narrower one keeps them), every width field reduced under the config's own name,
    and only fields the config has are named (no key-value heads for OPT)."""
    cfg = load_config(str(CONFIGS / name))
    twin, reduced = reduced_config(cfg)
    assert ", ".join(f"{k} {a}→{b}" for k, (a, b) in reduced.items()) == shown
    full = build_model(cfg.config, cfg.shape.dtype)
    small = build_model(twin, cfg.shape.dtype)
    assert _structure(small) == _structure(full)
    for module_name, module in full.named_modules():  # each layer's projection keeps which side is wider
        parts = module_name.split(".")
        if isinstance(module, torch.nn.Linear) and "0" in parts and all(not p.isdigit() or p == "0" for p in parts):
            twin_module = small.get_submodule(module_name)
            assert (module.in_features > module.out_features) == (twin_module.in_features > twin_module.out_features)


def test_the_validation_line_says_what_the_twin_has() -> None:
    """DeepseekV2Config sets `head_dim` to its qk_rope_head_dim whatever it is given: the line names the
    twin's value (8, its reduced rotary part), where it once named the 16 asked for."""
    cfg = load_config(str(CONFIGS / "deepseek-v2-lite.json"))
    twin, reduced = reduced_config(cfg)
    assert twin.head_dim == twin.qk_rope_head_dim == 8
    assert reduced["head_dim"] == (64, 8)


def test_model_types_that_cannot_be_priced_say_so_in_one_line(tmp_path: Path, capsys) -> None:
    from solar.tools.solar_llm import run

    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps({"model_type": "not_a_model", "hidden_size": 64, "num_hidden_layers": 2,
                                   "num_attention_heads": 4, "vocab_size": 100}))
    assert run([str(unknown), "--no-validate"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown model_type 'not_a_model'" in err
    # Reformer's LSH attention keeps a cache of its own (hash buckets), not a transformers Cache.
    reformer = tmp_path / "reformer.json"
    reformer.write_text(json.dumps({"model_type": "reformer", "hidden_size": 64, "num_hidden_layers": 2,
                                    "num_attention_heads": 2, "attention_head_size": 32, "attn_layers": ["lsh", "lsh"],
                                    "vocab_size": 320, "axial_pos_shape": [16, 16], "axial_pos_embds_dim": [32, 32],
                                    "feed_forward_size": 128, "is_decoder": True, "num_buckets": 8}))
    assert run([str(reformer), "--no-validate", "--phase", "prefill", "--prompt", "32"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds no transformers Cache" in err and "Traceback" not in err


@settings(max_examples=60)
@given(st.lists(st.sampled_from("sf"), min_size=1, max_size=6), st.integers(4, 8), st.integers(0, 5))
def test_repeating_twins_scale_each_kind_of_layer_exactly(pattern: list[str], periods: int, extra: int) -> None:
    """Twins one period apart: the first twin plus whole periods (the twins' difference) is the model, so
    linear scaling counts each kind of layer (sliding, full) exactly as often as the model has it. (A twin
    holds at least two layers: alike layers, a period of 1, have twins of 2 and 3 from 4 layers on.)"""
    period = next(p for p in range(1, len(pattern) + 1)
                  if all(pattern[i] == pattern[i % p] for i in range(len(pattern))))
    pattern = pattern[:period]
    total = periods * period + extra % period
    types = [pattern[i % period] for i in range(total)]
    twins = repeating_twins(types, total)
    assert twins is not None and twins[1] - twins[0] == period
    a, b = twins
    for kind in set(pattern):
        count = [types[:n].count(kind) for n in (a, b)]
        assert types.count(kind) == count[0] + Fraction(total - a, b - a) * (count[1] - count[0])


def test_gemma2_full_depth_prices_its_sliding_and_full_layers() -> None:
    """Gemma-2-9B alternates sliding (window 4096) and full layers: past the window, a decode step's 21
    sliding layers attend W keys and its 21 full layers P + 1 (twins of 2 and 4 layers, scaled by periods)."""
    cfg, family = _family("gemma-2-9b")
    s = cfg.shape
    assert cfg.twin_layers() == (2, 4)
    step = price_phase(cfg, "decode", [H100], 2, 8192)
    assert sorted(step.twins) == [2, 4]
    batch, context = 2, 6000
    cost = step.cost(batch, context, "h100-sxm", "whole_graph")
    keys = 21 * s.sliding_window + 21 * (context + 1)
    linear = s.layers * family.layer_macs(cfg.raw) + family.lm_head(cfg.raw)
    assert cost.macs == batch * linear + 2 * batch * s.heads * keys * s.head_dim
