"""Mixtures of experts as Hugging Face runs them by default: the grouped experts kernel (`_grouped_mm`, or
transformers' `grouped_mm_fallback`, with `histc` group sizes), rewritten as per-row products through each
row's expert (frontends/torch_grouped_experts.py). Stock configs run unedited: Qwen3-MoE (30B-A3B) at full
size on meta with exact MACs and the least weights any routing reads; a reduced Mixtral priced the same as
its batched form in every mode, and validated against the model (which runs the grouped kernel)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("transformers.models.qwen3_moe", reason="this transformers has no Qwen3-MoE")

from solar.bench.llm_serving import model_memory, price_phase
from solar.frontends.llm_models import load_config
from solar.targets.loader import load_target

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
H100 = load_target("h100")


def test_qwen3_moe_decode_is_exact():
    """Qwen3-30B-A3B: 128 experts, top-8, q/k norms per head, no shared expert. A decode step puts each
    token through 8 experts; it reads 8 experts' weights per layer whatever the batch."""
    cfg = load_config(str(CONFIGS / "qwen3-30b-a3b.json"))
    memory = model_memory(cfg)
    s, raw = cfg.shape, cfg.raw
    h, d, inter = s.hidden, s.head_dim, raw["moe_intermediate_size"]
    assert (s.experts, s.top_k, s.layers, d) == (128, 8, 48, 128)
    attention = h * s.heads * d + 2 * h * s.kv_heads * d + s.heads * d * h
    expert = 3 * h * inter
    norms = 2 * h + 2 * d  # input and post-attention norms, q and k norms
    params = s.layers * (attention + s.experts * h + s.experts * expert + norms) + 2 * s.vocab * h + h
    assert params == 30_532_122_624 and memory.weight_bytes == params * 2  # Qwen3-30B-A3B's 30.5B, bf16
    assert memory.expert_bytes == expert * 2
    step = price_phase(cfg, "decode", [H100], 4, 64)
    batch, context = 3, 200
    cost = step.cost(batch, context, "h100-sxm", "whole_graph")
    per_token = s.layers * (attention + s.experts * h + s.top_k * expert) + s.vocab * h
    assert cost.macs == batch * per_token + 2 * s.layers * batch * s.heads * (context + 1) * d
    least = memory.weight_bytes - s.vocab * h * 2 - s.layers * (s.experts - s.top_k) * memory.expert_bytes
    assert cost.bytes == (least + h * 2 + batch * 8 + (d // 2) * 4
                          + batch * (context + 1) * s.kv_bytes_per_token + batch * s.vocab * 2)


@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_grouped_experts_price_as_their_rows(phase):
    """The stock (grouped) kernel and `batched_mm` compute the same products: the same MACs and bytes in
    every mode, at every point."""
    grouped = price_phase(load_config(str(CONFIGS / "tiny-mixtral-stock.json")), phase, [H100], 2, 8)
    batched = price_phase(load_config(str(CONFIGS / "tiny-mixtral-batched.json")), phase, [H100], 2, 8)
    for batch, length in ((1, 8), (3, 13)):
        for mode in ("unfused", "fused", "whole_graph"):
            a = grouped.cost(batch, length, "h100-sxm", mode)
            b = batched.cost(batch, length, "h100-sxm", mode)
            assert (a.macs, a.bytes) == (b.macs, b.bytes)


def test_grouped_experts_validate_against_the_model():
    from solar.frontends.llm_validate import validate_step

    check = validate_step(load_config(str(CONFIGS / "tiny-mixtral-stock.json")), "decode")
    assert check.report.ok, check.report.error
