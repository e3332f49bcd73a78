"""Twins for models whose first layers differ from the rest (DeepSeek's dense first layers,
`first_k_dense_replace`; Qwen2-MoE's `mlp_only_layers`): the twins keep the prefix and scale only the
repeating body, so that a model of L layers exports the prefix plus two and three body layers, not all L.
The scaled counts are the full export's, exactly, and the closed form of the absorbed MLA decode's."""

from __future__ import annotations

import json
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("transformers")
pytest.importorskip("transformers.models.deepseek_v3", reason="this transformers has no DeepSeek-V3")

from test_llm_mla import _absorbed_decode_macs

from solar.bench.llm_serving import price_phase
from solar.frontends.llm_families import repeating_twins
from solar.frontends.llm_models import load_config
from solar.targets.loader import load_target

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
H100 = load_target("h100")


@settings(max_examples=80)
@given(st.lists(st.sampled_from("dm"), max_size=4), st.lists(st.sampled_from("sf"), min_size=1, max_size=4),
       st.integers(2, 9), st.integers(0, 3))
def test_prefix_and_periods_count_each_kind_exactly(prefix: list[str], pattern: list[str], periods: int,
                                                    extra: int) -> None:
    """Any prefix, then a repeating pattern: the first twin plus (L − a)/p times the twins' difference
    holds each kind of layer exactly as often as the model; where twins exist, they are smaller."""
    body = [pattern[i % len(pattern)] for i in range(periods * len(pattern) + extra % len(pattern))]
    kinds = [f"prefix-{k}" for k in prefix] + body
    total = len(kinds)
    twins = repeating_twins(kinds, total)
    if twins is None:
        return
    a, b = twins
    assert b < total and a >= 2
    k = Fraction(total - a, b - a)
    assert k.denominator == 1
    small, large, full = Counter(kinds[:a]), Counter(kinds[:b]), Counter(kinds)
    for kind in full:
        assert full[kind] == small[kind] + k * (large[kind] - small[kind])


def test_dense_first_layer_twins() -> None:
    """DeepSeek-V2-Lite: 1 dense layer, 26 MoE layers: twins of 3 and 4 layers (the dense one and two and
    three MoE layers), not 27. DeepSeek-V3's shape (3 dense of 61): 5 and 6. Alike layers keep 2 and 3."""
    lite = load_config(str(CONFIGS / "deepseek-v2-lite.json"))
    assert not lite.layers_alike and lite.twin_layers() == (3, 4)
    assert load_config(str(CONFIGS / "llama-2-7b.json")).twin_layers() == (2, 3)


def _config(tmp_path: Path, name: str, **fields: object) -> str:
    raw = {**json.loads((CONFIGS / name).read_text()), **fields}
    path = tmp_path / f"{name}-{len(fields)}.json"
    path.write_text(json.dumps(raw))
    return str(path)


def test_deepseek_v3_shape_and_mlp_only_layers_twins(tmp_path: Path) -> None:
    v3 = load_config(_config(tmp_path, "small-deepseek-v3.json", num_hidden_layers=61, first_k_dense_replace=3))
    assert v3.twin_layers() == (5, 6)
    # Qwen2-MoE with dense layers 0 and 1 (`mlp_only_layers`), MoE from there on.
    qwen = load_config(_config(tmp_path, "qwen1.5-moe-a2.7b.json", mlp_only_layers=[0, 1]))
    assert qwen.twin_layers() == (4, 5)
    # Dense layers 1 and 5: a prefix of six layers of their own kinds, then two and three MoE layers.
    scattered = load_config(_config(tmp_path, "qwen1.5-moe-a2.7b.json", mlp_only_layers=[1, 5]))
    assert scattered.twin_layers() == (8, 9)
    # A dense layer near the end (22 of 24): no body repeats after it; every layer is exported.
    late = load_config(_config(tmp_path, "qwen1.5-moe-a2.7b.json", mlp_only_layers=[22]))
    assert late.twin_layers() is None


def test_prefix_twins_are_the_full_export(tmp_path: Path) -> None:
    """A 5-layer DeepSeek-V2 (1 dense, 4 MoE) priced from its 3- and 4-layer twins: FLOPs, bytes and MACs
    equal the 5-layer export's, and every mode's time (each roofline at the full counts); the MACs equal
    the absorbed decode's closed form."""
    cfg = load_config(_config(tmp_path, "tiny-deepseek-v2.json", num_hidden_layers=5))
    assert cfg.twin_layers() == (3, 4)
    scaled = price_phase(cfg, "decode", [H100], 2, 16)
    assert sorted(scaled.twins) == [3, 4]
    cfg._twins[:] = [None]  # every layer exported
    full = price_phase(cfg, "decode", [H100], 2, 16)
    assert sorted(full.twins) == [5]
    for batch, context in ((1, 16), (3, 40)):
        for mode in ("unfused", "fused", "whole_graph"):
            a, b = (step.cost(batch, context, "h100-sxm", mode) for step in (scaled, full))
            assert (a.flops, a.bytes, a.macs) == (b.flops, b.bytes, b.macs)
            assert a.seconds == pytest.approx(b.seconds, rel=1e-12)
        assert a.macs == _absorbed_decode_macs(cfg.raw, batch, context)
