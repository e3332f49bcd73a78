"""The deployment search (bench/llm_search.py): the SLO and option grammar, the Pareto front, and each
deployment's figures against the serving point of the same deployment."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solar.bench.llm_deploy import ChipMemory, Split
from solar.bench.llm_search import (
    Deployment,
    SearchRequest,
    pareto_front,
    plot_search,
    price_option,
    render_search,
    search,
    search_json,
)
from solar.bench.llm_serving import model_memory, serving_point
from solar.bench.llm_slo import Slo, check_search_flags, parse_quantize_options, parse_slo
from solar.frontends.llm_models import LlmError, load_config
from solar.targets.loader import load_target

DATA = os.path.join(os.path.dirname(__file__), "data", "hf_configs")
H100, B200 = load_target("h100"), load_target("b200")


def test_slo_grammar():
    assert parse_slo("ttft=500ms,tpot=30ms") == Slo(0.5, 0.03)
    assert parse_slo("tpot=2.5e-2s") == Slo(None, 0.025)
    assert parse_slo("ttft=800us") == Slo(0.0008, None)
    for text, message in (("ttft=500", "has no unit"), ("ttft=5min", "unknown unit 'min'"),
                          ("latency=3ms", "should be ttft=TIME or tpot=TIME"), ("tpot=0ms", "must be positive"),
                          ("tpot=fast", "is not a time")):
        with pytest.raises(LlmError, match=message):
            parse_slo(text)


def test_quantize_option_grammar():
    none, int4 = parse_quantize_options("none,int4+kv=fp8+g=64")
    assert not none.active and (int4.weights, int4.kv_cache, int4.group_size) == ("int4", "fp8", 64)
    assert parse_quantize_options("fp8+act=fp8")[0].activations == "fp8"
    with pytest.raises(LlmError, match="unknown format 'int3'"):
        parse_quantize_options("int3")
    with pytest.raises(LlmError, match="'kv=fp16' in 'int8\\+kv=fp16'"):
        parse_quantize_options("int8+kv=fp16")
    with pytest.raises(LlmError, match="--throughput is for a search"):
        check_search_flags(None, 100.0, "none", 1)
    with pytest.raises(LlmError, match="--data-parallel with --slo"):
        check_search_flags("tpot=1ms", None, "none", 2)


def _deployment(chips: int, per_chip: float) -> Deployment:
    return Deployment("h100-sxm", "none", Split(tensor=chips), 1, 0.0, 1 / (per_chip * chips), ChipMemory(0, 0, 0),
                      True, True, 1)


@given(st.lists(st.tuples(st.sampled_from([1, 2, 4, 8, 16]), st.integers(1, 1000)), min_size=1, max_size=30))
def test_pareto_front_is_the_undominated_set(points: list[tuple[int, int]]):
    deployments = [_deployment(c, float(t)) for c, t in points]
    front = pareto_front(deployments)
    key = [(d.chips, d.tokens_per_s_per_chip) for d in front]
    assert key == sorted(key) and len({c for c, _ in key}) == len(key)
    for d in deployments:
        beaten = any(f.chips <= d.chips and f.tokens_per_s_per_chip >= d.tokens_per_s_per_chip for f in front)
        assert beaten
    for f in front:  # no front member beaten by another deployment strictly on one axis and equal on the other
        assert not any((d.chips < f.chips and d.tokens_per_s_per_chip >= f.tokens_per_s_per_chip)
                       or (d.chips <= f.chips and d.tokens_per_s_per_chip > f.tokens_per_s_per_chip)
                       for d in deployments)


def test_search_matches_the_serving_points(tmp_path):
    path = os.path.join(DATA, "tiny-llama.json")
    cfg = load_config(path)
    slo = parse_slo("ttft=1s,tpot=1s")
    request = SearchRequest(path, [H100, B200], slo, 5e6, parse_quantize_options("none"), prompt=32, generate=4,
                            batches=[1, 4, 16], tensor=[1, 2, 4], pipeline=[1, 2])
    result = search(cfg, request)
    assert result.evaluated == 2 * 6 * 3  # targets × splits (TP 1, 2, 4 × PP 1, 2) × batches
    assert result.front and len(result.feasible) == result.evaluated  # a tiny model meets a loose SLO everywhere
    memory = model_memory(cfg)
    priced = price_option(cfg, request.quantizations[0], request, [1, 2, 4, 8, 16])
    for d in result.feasible:
        target = H100 if d.target == "h100-sxm" else B200
        replica = Split(d.split.tensor, d.split.pipeline, d.split.expert)
        decode = serving_point(priced.decode, cfg, memory, target, "fused", d.batch, 32, generate=4, split=replica)
        assert d.tpot_s == pytest.approx(decode.time_s, rel=1e-12)
        prefill = serving_point(priced.prefill, cfg, memory, target, "fused", 1, 32, split=replica)
        assert d.ttft_s == pytest.approx(prefill.time_s, rel=1e-12)
        assert d.request_latency_s == pytest.approx(d.ttft_s + 4 * d.tpot_s, rel=1e-12)
        assert d.memory.weight_bytes == decode.weight_bytes and d.memory.kv_cache_bytes == decode.kv_cache_bytes
        # The fewest replicas whose decode tokens/s reach the throughput asked.
        assert d.split.data * d.tokens_per_s_per_replica >= 5e6
        assert (d.split.data - 1) * d.tokens_per_s_per_replica < 5e6
    record = json.loads(json.dumps(search_json(result)))
    assert [f["chips"] for f in record["front"]] == [d.chips for d in result.front]
    assert {"chips", "weight_bytes_per_chip", "request_latency_s", "tokens_per_s_per_chip"} <= set(record["front"][0])
    assert set(record["front_per_target"]) == {"h100-sxm", "b200"}
    text = render_search(result)
    assert "Pareto front: chips against tokens/s per chip (bounds)" in text and "fewest h100-sxm chips:" in text
    plot_search(result, str(tmp_path / "front.png"))
    assert (tmp_path / "front.png").read_bytes()[:4] == b"\x89PNG"
    # A tighter TPOT than any deployment's bound leaves no front.
    tight = search(cfg, SearchRequest(path, [H100], parse_slo("tpot=1ns"), 1.0, parse_quantize_options("none"),
                                      prompt=32, generate=4, batches=[1], tensor=[1], pipeline=[1]))
    assert tight.front == [] and tight.evaluated == 1
    assert "no deployment searched meets the SLO and fits" in render_search(tight)


def test_flags_given_at_their_default_value_are_kept():
    """`--batch 1 --tensor-parallel 1` fixes batch and TP at 1; only flags not given are searched."""
    from solar.bench.llm_search import search_from_flags

    path = os.path.join(DATA, "tiny-llama.json")
    fixed = search_from_flags(path, "h100", "ttft=1s,tpot=1s", None, "none", "1", "32", 4, (1, None, None),
                              None, "dynamic")
    assert {(d.batch, d.split.tensor) for d in fixed.feasible} == {(1, 1)}
    # PP is searched over what divides tiny-llama's 4 layers (1, 2, 4); it has no experts to split.
    assert sorted(d.split.pipeline for d in fixed.feasible) == [1, 2, 4] and fixed.evaluated == 3
    searched = search_from_flags(path, "h100", "ttft=1s,tpot=1s", None, "none", None, "32", 4, (None, None, None),
                                 None, "dynamic")
    assert {d.batch for d in searched.feasible} == {2 ** k for k in range(10)}
    assert {d.split.tensor for d in searched.feasible} > {1}
