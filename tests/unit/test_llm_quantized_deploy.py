"""Quantized deployments at full size on the meta device (issue 39): Llama-3-70B in fp8 over TP 4 × PP 2 and a
DeepSeek-V3-shaped model (dense first layer, routed experts, MLA) in fp8 over EP, each chip's weights, cache
and collectives exact against closed forms; the search's memory measured layer by layer."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("transformers")

from solar.bench.llm_deploy import Split, chip_weight_bytes
from solar.bench.llm_quantized import quantized_memory
from solar.bench.llm_search import quantizer
from solar.bench.llm_serving import model_memory, price_phase, serving_point
from solar.bench.llm_slo import parse_quantize_options
from solar.frontends.llm_models import load_config
from solar.passes.quantize import QuantizeOptions
from solar.targets.loader import load_target

DATA = os.path.join(os.path.dirname(__file__), "data", "hf_configs")
H100 = load_target("h100")
NVLINK = 900e9 / 2  # bytes/s each way
FP8 = QuantizeOptions("fp8", kv_cache="fp8", exclude=("lm_head",))


def _fp8(out: int, inputs: int, experts: int = 1) -> int:
    """An fp8 projection: a byte a weight and an f32 scale per output channel (per expert)."""
    return experts * (out * inputs + out * 4)


def test_llama3_70b_fp8_tp4_pp2_decode_is_exact():
    cfg = load_config(os.path.join(DATA, "llama-3-70b.json"))
    s = cfg.shape
    h, i, kv, d, b2 = s.hidden, 28672, s.kv_heads, s.head_dim, s.dtype_bytes
    memory = quantized_memory(cfg, model_memory(cfg), FP8)
    layer = 2 * _fp8(h, h) + 2 * _fp8(kv * d, h) + 2 * _fp8(i, h) + _fp8(h, i) + 2 * h * b2  # q o, k v, gate up, down
    assert layer == 856_006_656 and memory.layer_bytes == (layer,) * 80
    embed = s.vocab * h * b2  # the embedding and lm_head stay bf16
    assert memory.weight_bytes == 80 * layer + 2 * embed + h * b2
    assert memory.kv_bytes_per_token == 80 * 2 * kv * d  # one byte a key or value
    split = Split(tensor=4, pipeline=2)
    batch, context, generate = 8, 4096, 2
    step = price_phase(cfg, "decode", [H100], batch, context + generate, quantize=FP8)
    point = serving_point(step, cfg, memory, H100, "fused", batch, context, generate=generate, split=split)
    # The last stage: 40 fp8 layers and the bf16 final norm and head, over 4 chips.
    assert point.weight_bytes == 40 * layer // 4 + (h * b2 + embed) // 4 == 9_085_407_232
    # 40 layers of fp8 keys and values, 2 of the 8 heads a chip, all 8 sequences after P + G tokens.
    assert point.kv_cache_bytes == 40 * 2 * (kv // 4) * d * batch * (context + generate)
    micro = batch // 2
    assert point.memory.activation_bytes == micro * h * b2 + micro * s.vocab * b2 // 4
    # The all-reduced hidden states stay bf16 (fp8 weights, bf16 activations): 2 per layer, 3/4 each way.
    message = micro * h * b2
    coll = point.collectives
    assert coll.allreduce_bytes == 2 * 80 * message * 3 / 4
    assert coll.allreduce_s == pytest.approx(2 * 80 * message * 3 / 4 / NVLINK, rel=1e-12)
    assert coll.p2p_bytes == message / 4
    # The whole step of a micro-batch: fp8 projections and their scales, the bf16 head, norms and embedding
    # row, the fp8 cache (and an f32 scale per cache tensor), the new token's fp8 keys and values, the logits.
    projections = 80 * (2 * h * h + 2 * kv * d * h + 3 * h * i)
    scales = 80 * (2 * h + 2 * kv * d + 2 * i + h) * 4
    cost = step.cost(micro, context, "h100-sxm", "whole_graph")
    inv_freq = d // 2 * 4
    assert cost.bytes == (projections + scales + embed + (2 * 80 + 1) * h * b2 + h * b2 + micro * 8 + inv_freq
                          + micro * context * memory.kv_bytes_per_token + 2 * 80 * 4
                          + micro * memory.kv_bytes_per_token + micro * s.vocab * b2)
    works = [step.cost(micro, context + g, "h100-sxm", "fused").seconds for g in range(generate)]
    expected = sum(max(max(w / 4, coll.allreduce_s) + coll.p2p_s, max(w / 4, coll.allreduce_s)) for w in works)
    assert point.time_s == pytest.approx(expected / generate, rel=1e-12)


# small-deepseek-v3.json: hidden 128, 3 layers (the first dense, intermediate 256), 8 routed experts of width
# 32 and one shared, MLA (q rank 48, kv rank 32, rope 8, 4 heads of 16 + 8), f32, vocabulary 256.
ATTENTION = (_fp8(48, 128) + _fp8(96, 48) + _fp8(40, 128) + _fp8(128, 32) + _fp8(128, 64)
             + (48 + 32) * 4)  # q_a, q_b, kv_a, kv_b, o; the two low-rank norms
NORMS = 2 * 128 * 4
DENSE = ATTENTION + NORMS + 2 * _fp8(256, 128) + _fp8(128, 256)
EXPERTS = _fp8(64, 128, 8) + _fp8(128, 32, 8)  # gate_up and down of the 8 routed experts, stacked
MOE = ATTENTION + NORMS + _fp8(8, 128) + EXPERTS + 2 * _fp8(32, 128) + _fp8(128, 32)  # router, experts, shared
HEAD = 256 * 128 * 4  # the embedding; lm_head the same, excluded


def test_search_memory_is_measured_layer_by_layer():
    """A dense first layer stores fewer bytes than the expert layers after it: the search splits each as it
    is (every layer as the first would hold 281,408 − 263,712 B too few on the last of 3 stages)."""
    cfg = load_config(os.path.join(DATA, "small-deepseek-v3.json"))
    options, memory = quantizer(parse_quantize_options("fp8")[0], cfg, model_memory(cfg))
    assert options is not None and options.weights == "fp8"
    assert (DENSE, MOE, EXPERTS) == (132_128, 149_824, 104_448)
    assert memory.layer_bytes == (DENSE, MOE, MOE) and memory.layer_expert_bytes == (0, EXPERTS, EXPERTS)
    assert memory.expert_bytes == EXPERTS // 8 and memory.weight_bytes == DENSE + 2 * MOE + 2 * HEAD + 128 * 4
    # PP 3: the first stage holds the dense layer and the embedding; the last an expert layer, the norm, the head.
    assert chip_weight_bytes(memory, Split(pipeline=3)) == MOE + 128 * 4 + HEAD == 281_408
    assert chip_weight_bytes(memory, Split(expert=4)) == \
        DENSE + 2 * (MOE - EXPERTS + EXPERTS // 4) + 2 * HEAD + 128 * 4


def test_deepseek_v3_shaped_fp8_ep4_decode_is_exact():
    cfg = load_config(os.path.join(DATA, "small-deepseek-v3.json"))
    s = cfg.shape
    memory = quantized_memory(cfg, model_memory(cfg), FP8)
    # MLA caches the 32-wide latent and the 8-wide rotary key per token and layer: 40 fp8 bytes.
    assert memory.kv_bytes_per_token == 3 * (32 + 8)
    batch, context = 16, 128
    # Exported at test_llm_mla.py's example (batch 2, context 16): the same step, exported once in a process
    # (the quantization is a pass after it); every size stays a parameter, priced below at 16 and 128.
    step = price_phase(cfg, "decode", [H100], 2, 16, quantize=FP8)
    split = Split(expert=4)
    point = serving_point(step, cfg, memory, H100, "fused", batch, context, split=split)
    # Each EP rank: the dense layer, both expert layers' dense parts and 2 of their 8 experts, the rest.
    assert point.weight_bytes == DENSE + 2 * (MOE - EXPERTS + EXPERTS // 4) + 2 * HEAD + 128 * 4 == 537_760
    # Each rank's attention runs 4 of the 16 sequences: their cache alone.
    assert point.kv_cache_bytes == 3 * 40 * (batch // 4) * (context + 1)
    # Dispatch and combine in the two expert layers: the rank's 4 tokens' f32 hidden states, 3/4 each way.
    per_layer = batch // 4 * s.hidden * 4 * 3 / 4
    assert point.collectives.alltoall_bytes == 2 * 2 * per_layer
    assert point.collectives.alltoall_s == pytest.approx(2 * 2 * per_layer / NVLINK, rel=1e-12)
    assert point.collectives.allreduce_bytes == 0 == point.collectives.p2p_bytes
    cost = step.cost(batch, context, "h100-sxm", "fused")
    assert point.time_s == pytest.approx(max(cost.seconds / 4, point.collectives.alltoall_s), rel=1e-12)
