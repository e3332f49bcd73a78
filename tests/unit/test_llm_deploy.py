"""Deployments (bench/llm_deploy.py): tensor × pipeline × expert parallelism at full size on the meta device,
each chip's weights, cache, collectives and times exact against closed forms; the topology's links."""

from __future__ import annotations

import math
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solar.bench.llm_deploy import (
    Links,
    Split,
    _crosses_domain,
    check_split,
    collectives,
    micro_batches,
)
from solar.bench.llm_serving import model_memory, price_phase, serving_point
from solar.frontends.llm_models import LlmError, load_config
from solar.targets.loader import load_target

DATA = os.path.join(os.path.dirname(__file__), "data", "hf_configs")
H100 = load_target("h100")
NVLINK = 900e9 / 2  # bytes/s each way
INTERNODE = 100e9 / 2


def _cfg(name: str):  # type: ignore[no-untyped-def]
    return load_config(os.path.join(DATA, name))


def test_llama3_70b_tp4_pp2_decode_is_exact():
    cfg = _cfg("llama-3-70b.json")
    s = cfg.shape
    assert (s.layers, s.hidden, s.heads, s.kv_heads, s.head_dim, s.vocab) == (80, 8192, 64, 8, 128, 128256)
    memory = model_memory(cfg)
    h, i, kv, d, b2 = s.hidden, 28672, s.kv_heads, s.head_dim, s.dtype_bytes
    layer = (2 * h * h + 2 * h * kv * d + 3 * h * i + 2 * h) * b2  # q, o; k, v; gate, up, down; two norms
    embed = s.vocab * h * b2
    assert memory.weight_bytes == 80 * layer + 2 * embed + h * b2 == 70_553_706_496 * 2  # the published count
    split = Split(tensor=4, pipeline=2)
    check_split(cfg, split)
    batch, context, generate = 8, 4096, 2
    step = price_phase(cfg, "decode", [H100], batch, context + generate)
    point = serving_point(step, cfg, memory, H100, "fused", batch, context, generate=generate, split=split)
    # Each stage holds 40 layers over 4 chips; the last stage also the final norm and the head (the larger).
    assert point.weight_bytes == 40 * layer // 4 + (h * b2 + embed) // 4
    # The cache: 40 layers, the 8 key-value heads over 4 chips, all 8 sequences, after P + G tokens.
    assert point.kv_cache_bytes == 40 * 2 * (kv // 4) * d * b2 * batch * (context + generate)
    # Activations: the micro-batch's hidden states and its logits (vocabulary over 4 chips).
    micro = batch // 2
    assert point.memory.activation_bytes == micro * h * b2 + micro * s.vocab * b2 // 4
    assert point.fits and point.chips == 8 and point.split.chips == 8
    # Two all-reduces per layer of the micro-batch's hidden states, 3/4 of them each way, over NVLink;
    # one stage boundary inside the 8-GPU domain, a quarter of the message per chip.
    message = micro * h * b2
    coll = point.collectives
    assert coll.allreduce_bytes == 2 * 80 * message * 3 / 4
    assert coll.allreduce_s == pytest.approx(2 * 80 * message * 3 / 4 / NVLINK, rel=1e-12)
    assert coll.p2p_bytes == message / 4 and coll.p2p_s == pytest.approx(message / 4 / NVLINK, rel=1e-12)
    assert coll.alltoall_bytes == 0
    # TPOT: two micro-batches of 4 in a two-stage pipeline: a micro-batch's round trip.
    works = [step.cost(micro, context + g, "h100-sxm", "fused").seconds for g in range(generate)]
    expected = sum(max(max(w / 4, coll.allreduce_s) + coll.p2p_s, 2 * max(w / 4, coll.allreduce_s) / 2)
                   for w in works) / generate
    assert point.time_s == pytest.approx(expected, rel=1e-12)
    assert point.tokens_per_s == pytest.approx(batch / expected, rel=1e-12)
    assert point.tokens_per_s_per_chip == pytest.approx(batch / expected / 8, rel=1e-12)
    record = point.as_record()
    assert record["chips"] == 8 and record["weight_bytes_per_chip"] == point.weight_bytes
    assert record["pipeline_parallel"] == 2 and record["tensor_parallel"] == 4


def test_mixtral_ep8_decode_is_exact():
    # The stock config exports with "experts_implementation": "batched_mm" (tests/unit/data).
    cfg = _cfg("mixtral-8x7b.json")
    s = cfg.shape
    memory = model_memory(cfg)
    split = Split(expert=8)
    check_split(cfg, split)
    batch, context = 16, 1024
    step = price_phase(cfg, "decode", [H100], batch, context + 1)
    point = serving_point(step, cfg, memory, H100, "fused", batch, context, split=split)
    expert = memory.expert_bytes
    assert expert == 3 * s.hidden * 14336 * s.dtype_bytes
    dense_layer = memory.layer_weight_bytes - s.experts * expert
    # Each chip: every layer's dense part (attention, router, norms) and 1 of its 8 experts, all the rest.
    extra = memory.weight_bytes - s.layers * memory.layer_weight_bytes
    assert point.weight_bytes == s.layers * (dense_layer + expert) + extra
    # Each EP rank runs the attention of 2 of the 16 sequences: their cache only.
    assert point.kv_cache_bytes == s.kv_bytes_per_token * 2 * (context + 1)
    # Dispatch and combine per MoE layer: tokens × hidden × dtype × (N − 1)/N each way, per rank's tokens.
    tokens = batch // 8
    per_layer = tokens * s.hidden * s.dtype_bytes * 7 / 8
    assert point.collectives.alltoall_bytes == 2 * 32 * per_layer
    assert point.collectives.alltoall_s == pytest.approx(2 * 32 * per_layer / NVLINK, rel=1e-12)
    assert point.collectives.allreduce_bytes == 0
    cost = step.cost(batch, context, "h100-sxm", "fused")
    assert point.time_s == pytest.approx(max(cost.seconds / 8, point.collectives.alltoall_s), rel=1e-12)


def test_splits_that_do_not_divide_the_model():
    llama, mixtral = _cfg("llama-3-70b.json"), _cfg("mixtral-8x7b.json")
    with pytest.raises(LlmError, match="--pipeline-parallel 3 does not divide the 80 layers"):
        check_split(llama, Split(pipeline=3))
    with pytest.raises(LlmError, match="--tensor-parallel 3 does not divide the 64 attention heads"):
        check_split(llama, Split(tensor=3))
    with pytest.raises(LlmError, match="--expert-parallel 2: the model has no routed experts"):
        check_split(llama, Split(expert=2))
    with pytest.raises(LlmError, match="--expert-parallel 3 does not divide the 8 routed experts"):
        check_split(mixtral, Split(expert=3))
    with pytest.raises(LlmError, match="--data-parallel 0: must be a positive integer"):
        check_split(llama, Split(data=0))


def test_collectives_across_nvlink_domains():
    cfg = _cfg("llama-3-70b.json")
    s = cfg.shape
    tokens = 32
    message = tokens * s.hidden * s.dtype_bytes
    # TP 16 spans two 8-GPU domains: 7/8 of the message inside, then (2 − 1)/2 of an eighth across.
    coll = collectives(cfg, Split(tensor=16), H100, tokens, 0)
    intra, inter = 7 / 8 * message, 1 / 2 * message / 8
    assert coll.allreduce_bytes == 2 * 80 * (intra + inter)
    assert coll.allreduce_s == pytest.approx(2 * 80 * max(intra / NVLINK, inter / INTERNODE), rel=1e-12)
    # TP 8 × PP 2: the stage boundary is the domain's edge, so its send goes over the internode link.
    coll = collectives(cfg, Split(tensor=8, pipeline=2), H100, tokens, 0)
    assert coll.p2p_s == pytest.approx(message / 8 / INTERNODE, rel=1e-12)
    # A target with no NVLink cannot split a model.
    with pytest.raises(LlmError, match="has no nvlink_bandwidth"):
        collectives(cfg, Split(tensor=2), load_target("l40s"), tokens, 0)


@given(st.integers(1, 9), st.integers(1, 64), st.sampled_from([8, 16, 72]))
def test_stage_boundary_crossing_matches_every_chip(boundary: int, stage: int, domain: int):
    links = Links(1.0, 1.0, domain)
    brute = any(((boundary - 1) * stage + i) // domain != (boundary * stage + i) // domain for i in range(stage))
    assert _crosses_domain(links, boundary, stage) == brute


@given(st.integers(1, 512), st.integers(1, 16))
def test_micro_batches_divide_the_batch(batch: int, pipeline: int):
    m = micro_batches(batch, Split(pipeline=pipeline))
    assert batch % m == 0 and 1 <= m <= pipeline
    assert all(batch % k for k in range(m + 1, min(batch, pipeline) + 1))
    assert math.gcd(m, batch) == m


@given(st.sampled_from([1, 2, 4]), st.sampled_from([1, 2]), st.sampled_from([1, 2, 4]), st.integers(1, 64))
def test_every_weight_and_cached_token_is_held(tp: int, pp: int, ep: int, batch: int):
    """The busiest chip times the replica's chips holds at least the model and its cache (none is lost), and
    exactly them on one chip."""
    from solar.bench.llm_deploy import chip_cache_bytes, chip_weight_bytes

    cfg = _cfg("tiny-mixtral-batched.json")
    memory = _tiny_moe_memory()
    split = Split(tp, pp, ep)
    check_split(cfg, split)
    held = chip_weight_bytes(memory, split)
    assert held * split.replica_chips >= memory.weight_bytes
    per_layer = memory.kv_bytes_per_token // cfg.shape.layers
    cache = chip_cache_bytes(per_layer, [10] * cfg.shape.layers, batch, cfg.shape.kv_heads, split)
    assert cache * split.replica_chips >= memory.kv_bytes_per_token * batch * 10
    if split.replica_chips == 1:
        assert held == memory.weight_bytes and cache == memory.kv_bytes_per_token * batch * 10


_MEMORY: list = []


def _tiny_moe_memory():  # type: ignore[no-untyped-def]
    if not _MEMORY:
        _MEMORY.append(model_memory(_cfg("tiny-mixtral-batched.json")))
    return _MEMORY[0]
