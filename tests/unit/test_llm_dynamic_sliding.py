"""DynamicCache decode on sliding-window configs at every context. HF's sliding layer keeps the last W − 1
tokens: below the window its branch (`cumulative_length >= W`) and its slice (`[-(W − 1):]`) meet at
P = W − 2 and P = W − 1, where export specialises the context to a number. Those two lengths get an export
each (a pinned `StepModel` piece); the others stay a size parameter on either side. A config whose layers
differ (full and sliding) bounds the context by its sliding layers' guards, not its full ones'."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from solar.bench.llm_serving import StepModel, model_memory, price_phase, resident_cache_bytes, resident_tokens
from solar.frontends.llm_models import LlmError, export_phase, load_config, sliding_layers
from solar.targets.loader import load_target
from solar.tools.solar_llm import run

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
MISTRAL = str(CONFIGS / "tiny-mistral.json")  # window 16, 4 query heads over 2 key-value heads, 2 layers
H100 = load_target("h100")
BATCH = 3
CONTEXTS = [5, 13, 14, 15, 16, 40]  # below W − 2, W − 2, W − 1, W, past W
# Qwen2 with its first layer full and its second sliding, derived by HF from `max_window_layers` (no
# `layer_types` in the file: the cache classes say which layers slide).
QWEN2_MIXED = {"model_type": "qwen2", "vocab_size": 128, "hidden_size": 32, "intermediate_size": 64,
               "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
               "max_position_embeddings": 256, "use_sliding_window": True, "sliding_window": 16,
               "max_window_layers": 1, "torch_dtype": "float32"}


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("cfg") / "config.json"
    path.write_text(json.dumps(QWEN2_MIXED))
    return str(path)


def _linear_macs(path: str) -> int:
    s = load_config(path).shape
    q, kv = s.heads * s.head_dim, s.kv_heads * s.head_dim
    return s.layers * (2 * s.hidden * q + 2 * s.hidden * kv + 3 * s.hidden * 64) + s.vocab * s.hidden


def _attention_macs(path: str, context: int, sliding: list[bool]) -> int:
    """Q·K and P·V over the keys each layer attends: P cached + the new one, at most W in a sliding layer."""
    s = load_config(path).shape
    keys = sum(min(context + 1, s.sliding_window) if slides else context + 1 for slides in sliding)
    return 2 * BATCH * s.heads * s.head_dim * keys


def _pieces(step: StepModel) -> list[tuple[int, int | None, bool]]:
    out = []
    while step is not None:
        out.append((step.least_length, step.most_length, step.pinned))
        step = step.shorter
    return out


def test_every_context_around_the_window_is_priced_exactly():
    cfg = load_config(MISTRAL)
    s = cfg.shape
    step = price_phase(cfg, "decode", [H100], 2, max(CONTEXTS), lengths=CONTEXTS)
    # P ≥ W symbolic; W − 1 and W − 2 pinned, an export each; P ≤ W − 3 symbolic again.
    assert _pieces(step) == [(16, None, False), (15, 15, True), (14, 14, True), (1, 13, False)]
    step.prefetch([1, BATCH], CONTEXTS)
    cost = {n: step.cost(BATCH, n, "h100-sxm", "whole_graph") for n in CONTEXTS}
    for n in CONTEXTS:
        assert cost[n].macs == BATCH * _linear_macs(MISTRAL) + _attention_macs(MISTRAL, n, [True, True])
    # Bytes: each cached token read once up to the W − 1 the cache keeps, then W − 1 always.
    token = BATCH * s.kv_bytes_per_token
    assert cost[13].bytes - cost[5].bytes == 8 * token
    assert cost[14].bytes - cost[13].bytes == cost[15].bytes - cost[14].bytes == token
    assert cost[15].bytes == cost[16].bytes == cost[40].bytes
    # The prefetched grid and a point priced alone agree (the pinned pieces have no length axis).
    alone = price_phase(cfg, "decode", [H100], 2, 14)
    assert alone.pinned and alone.cost(BATCH, 14, "h100-sxm", "whole_graph") == cost[14]


def test_a_pinned_export_holds_at_its_length_alone():
    cfg = load_config(MISTRAL)
    pinned = export_phase(cfg, "decode", 2, 15, 2)
    assert "context" not in pinned.sizes and pinned.minimums["context"] == pinned.maximums["context"] == 15
    step = price_phase(cfg, "decode", [H100], 2, 15)
    with pytest.raises(LlmError, match=r"context 16: the decode step was exported for context ≤ 15"):
        step.cost(1, 16, "h100-sxm", "whole_graph")
    with pytest.raises(LlmError, match=r"context 14: the decode step was exported for context ≥ 15"):
        step.cost(1, 14, "h100-sxm", "whole_graph")


def test_lengths_above_an_export_get_their_own(mixed):
    # Exported below the window, the step holds for P ≤ W − 3: the longer lengths asked with it are priced
    # by exports above it (`StepModel.longer`), as if they had been the example.
    cfg = load_config(mixed)
    low = price_phase(cfg, "decode", [H100], 2, 5, lengths=[5, 14, 40])
    assert (low.least_length, low.most_length) == (1, 13) and low.longer is not None
    high = price_phase(cfg, "decode", [H100], 2, 40, lengths=[5, 14, 40])
    for n in (5, 14, 40):
        assert low.cost(BATCH, n, "h100-sxm", "fused") == high.cost(BATCH, n, "h100-sxm", "fused")


def test_mixed_layers_bound_the_context_by_their_sliding_ones(mixed):
    cfg = load_config(mixed)
    assert cfg.config.layer_types == ["full_attention", "sliding_attention"]  # derived by HF
    assert sliding_layers(cfg.config, "dynamic") == sliding_layers(cfg.config) == [False, True]
    # The full layer's cache holds any P ≥ 2, the sliding one's P ≥ W only: the export at 40 holds for the
    # latter, so P = 5 is priced by an export below the window, not extrapolated from the one past it.
    assert export_phase(cfg, "decode", 2, 40, 2).minimums["context"] == 16
    step = price_phase(cfg, "decode", [H100], 2, 40, lengths=CONTEXTS)
    s = cfg.shape
    for n in CONTEXTS:
        cost = step.cost(BATCH, n, "h100-sxm", "whole_graph")
        assert cost.macs == BATCH * _linear_macs(mixed) + _attention_macs(mixed, n, [False, True])
    assert step.cost(BATCH, 5, "h100-sxm", "whole_graph").macs == 69888
    per_layer_token = BATCH * s.kv_bytes_per_token // s.layers
    past = [step.cost(BATCH, n, "h100-sxm", "whole_graph").bytes for n in (16, 40)]
    assert past[1] - past[0] == 24 * per_layer_token  # past W only the full layer's reads grow


def test_resident_cache_follows_the_cache_class(mixed):
    memory = model_memory(load_config(mixed))
    per_layer_token = memory.kv_bytes_per_token // 2
    assert resident_tokens(load_config(mixed), 40) == [40, 15]  # DynamicCache keeps W − 1
    assert resident_tokens(load_config(mixed, cache="static"), 40) == [40, 16]  # a ring of W slots
    assert resident_tokens(load_config(mixed), 9) == [9, 9]
    assert resident_cache_bytes(load_config(mixed), memory, BATCH, 40) == BATCH * 55 * per_layer_token


def test_solar_llm_prices_the_contexts_at_the_window(tmp_path):
    out = tmp_path / "decode.json"
    # Batches 1 and 2: the CLI exports at the largest, batch 2, as the tests above do, so that its pinned
    # exports at W − 1 and W − 2 are theirs, reused (an export is the most of this file's time).
    assert run([MISTRAL, "--phase", "decode", "--batch", "1,2", "--context", "14,15,16", "--no-validate",
                "--json", str(out)]) == 0
    points = [p for p in json.loads(out.read_text())["points"] if p["mode"] == "whole-graph"]
    assert sorted({p["context"] for p in points}) == [14, 15, 16]
    macs = {(p["batch"], p["context"]): p["macs"] for p in points}
    for (batch, context), got in macs.items():
        attention = 2 * batch * 4 * 8 * 2 * min(context + 1, 16)
        assert got == batch * _linear_macs(MISTRAL) + attention
