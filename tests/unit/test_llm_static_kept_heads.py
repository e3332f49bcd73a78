"""`--cache static` where HF's code broadcasts the key-value heads before its cache update (Falcon-40B: 8 heads
handed to the cache as 128): the static cache's buffers hold the 8 heads an engine keeps
(llm_steps.keep_heads_in), so its bytes, and a step's reads and writes of it, are the real heads' bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers")

from solar.backends.sweep import CostSurface
from solar.bench.llm_serving import _at, lifted
from solar.frontends.llm_models import export_phase, load_config
from solar.frontends.llm_validate import validate_step
from solar.targets.loader import load_target

FALCON_40B = str(Path(__file__).parent / "data" / "hf_configs" / "falcon-40b.json")
H100 = load_target("h100")
BATCH, CONTEXT = 3, 100
# Falcon-40B's stock config: hidden 8192, 128 query heads of 64 over 8 key-value heads, vocabulary 65,024.
H, HEADS, KV, D, V = 8192, 128, 8, 64, 65_024


def test_falcon_40b_static_decode_holds_and_prices_its_8_heads() -> None:
    """One layer at full size on meta, the cache at P + 1 slots: its buffers are [B, 8, slots, 64] bf16 and
    the step's MACs and bytes are the closed forms of the 8 heads kept (HF's broadcast buffers were 16
    times as large: 128 heads)."""
    cfg = load_config(FALCON_40B, cache="static")
    exported = export_phase(cfg, "decode", 2, 64, 1)
    caches = [v for v in exported.module.entry.args if v.name.startswith("cache")]
    slots = exported.sizes["cache_slots"]
    assert [str(v.type) for v in caches] == [f"tensor<BATCHx{KV}x{slots}x{D}xbf16>"] * 2
    module, remarks = lifted(exported.module)
    assert remarks == []
    values = {exported.sizes["batch"]: BATCH, exported.sizes["context"]: CONTEXT, slots: CONTEXT + 1}
    cost = _at(CostSurface(module, [H100]), values, "h100-sxm", "whole_graph")
    layer = H * (H + 2 * KV * D) + 9 * H * H  # fused query-key-value, output, 4h MLP (no biases)
    attention = 2 * BATCH * HEADS * (CONTEXT + 1) * D  # Q·K and P·V over P + 1 keys
    assert cost.macs == BATCH * (layer + V * H) + attention
    weights = 2 * (V * H + layer + 4 * H + 2 * H)  # the tied embedding, the layer and its 2 norms, the last norm
    kv_token = 2 * KV * D * 2  # one layer's keys and values of one token, bf16
    assert cost.bytes == (weights + D // 2 * 4 + 2 * 8  # rotary frequencies (f32); the heads' indices
                          + BATCH * 8  # the token ids
                          + BATCH * CONTEXT * kv_token + BATCH * kv_token  # the live cache read, the new token stored
                          + BATCH * V * 2)  # the last position's logits
    assert cost.bytes == 2_425_416_872


def test_falcon_40b_static_prefill_fills_8_heads() -> None:
    exported = export_phase(load_config(FALCON_40B, cache="static"), "prefill", 2, 64, 1)
    assert [str(t) for t in exported.module.entry.result_types] == [
        f"tensor<BATCHx1x{V}xbf16>", f"tensor<BATCHx{KV}xIDS_1x{D}xbf16>", f"tensor<BATCHx{KV}xIDS_1x{D}xbf16>"]


@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_falcon_40b_static_twin_validates_against_hfs_broadcast_cache(phase: str) -> None:
    """The reduced twin (32 query heads over 2) run against HF's own code: the attention reads the kept
    heads broadcast, as HF's buffers would hold them."""
    result = validate_step(load_config(FALCON_40B, cache="static"), phase)
    assert result.report.ok, result.line()
    assert result.reduced["num_kv_heads"] == (8, 2)
