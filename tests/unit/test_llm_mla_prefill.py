"""An MLA prefill priced at the lesser of its two forms per point (bench/llm_serving.py `alternative`): as
HF writes it (keys and values expanded from the latent through `kv_b_proj`) and absorbed (W_UK into the
query, W_UV into the output, attention over the latent). Both hold the same linear work per token; the
expanded form attends over dn + dr wide keys and dv wide values, the absorbed over r + dr and r, but reads
no expanded keys and values. A lower bound takes the lesser at each point: the absorbed where the step is
memory-bound (few tokens), the expanded where its attention dominates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("transformers")
pytest.importorskip("transformers.models.deepseek_v3", reason="this transformers has no DeepSeek-V3")

from test_llm_mla import least_step_bytes

from solar.bench.llm_serving import price_phase
from solar.frontends.llm_models import export_phase, load_config
from solar.targets.loader import load_target

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
H100 = load_target("h100")


def _prefill_macs(raw: dict[str, Any], batch: int, prompt: int, absorbed: bool) -> int:
    """A prefill's MACs from an empty cache: per token the query (direct or through q_lora_rank), the latent's
    down-projection, r·H·(dn + dv) either through kv_b_proj or through W_UK and W_UV, o_proj and the MLP;
    per layer and head the S(S + 1)/2 causal pairs, each dn + dr + dv wide expanded or 2r + dr absorbed;
    the LM head of the last position."""
    h, heads, layers = raw["hidden_size"], raw["num_attention_heads"], raw["num_hidden_layers"]
    dn, dr, dv, r = raw["qk_nope_head_dim"], raw["qk_rope_head_dim"], raw["v_head_dim"], raw["kv_lora_rank"]
    q_rank = raw.get("q_lora_rank")
    query = h * heads * (dn + dr) if q_rank is None else h * q_rank + q_rank * heads * (dn + dr)
    linear = query + h * (r + dr) + r * heads * (dn + dv) + heads * dv * h
    dense = 3 * h * raw["intermediate_size"]
    moe = (h * raw["n_routed_experts"] + 3 * h * raw["moe_intermediate_size"] * raw["n_shared_experts"]
           + raw["num_experts_per_tok"] * 3 * h * raw["moe_intermediate_size"])
    first = raw["first_k_dense_replace"]
    per_token = layers * linear + first * dense + (layers - first) * moe
    pairs = prompt * (prompt + 1) // 2
    attention = layers * heads * pairs * ((2 * r + dr) if absorbed else (dn + dr + dv))
    return batch * (prompt * per_token + attention + raw["vocab_size"] * h)


def test_prefill_is_the_lesser_of_expanded_and_absorbed() -> None:
    cfg = load_config(str(CONFIGS / "tiny-deepseek-v2.json"))
    raw = cfg.raw
    step = price_phase(cfg, "prefill", [H100], 1, 16)  # its experts route B·S tokens: one export at batch 1
    absorbed = step.alternative
    assert absorbed is not None and absorbed.alternative is None
    assert export_phase(cfg, "prefill", 1, 16, raw["num_hidden_layers"], batch_symbolic=False,
                        absorbed=True).absorbed == raw["num_hidden_layers"]
    chosen = {}
    for batch, prompt in ((1, 16), (1, 40), (1, 300)):
        for mode in ("fused", "whole_graph"):
            expanded_cost = step._own_cost(batch, prompt, "h100-sxm", mode)
            absorbed_cost = absorbed.cost(batch, prompt, "h100-sxm", mode)
            assert expanded_cost.macs == _prefill_macs(raw, batch, prompt, absorbed=False)
            assert absorbed_cost.macs == _prefill_macs(raw, batch, prompt, absorbed=True)
            cost = step.cost(batch, prompt, "h100-sxm", mode)
            assert cost.seconds == min(expanded_cost.seconds, absorbed_cost.seconds)
            chosen[batch, prompt, mode] = "absorbed" if cost.macs == absorbed_cost.macs else "expanded"
            # Both forms read kv_b_proj's weight whole (the absorbed one as its two slices, W_UK and W_UV)
            # and keep the expanded keys and values inside the fused group: the least bytes, alike. (The
            # absorbed form once read only the larger slice, 16,384 B fewer at these sizes, which no kernel can.)
            least = least_step_bytes(raw, batch, 0, prompt, cfg.shape.dtype_bytes)
            assert expanded_cost.bytes == absorbed_cost.bytes == cost.bytes == least
    # 16 tokens: memory-bound, the same 348,560 B in either form, so the same time, and the expanded form's
    # fewer MACs settle the tie.
    assert step.cost(1, 16, "h100-sxm", "fused").bytes == 348_560
    assert chosen[1, 16, "fused"] == "expanded"
    # 300 tokens: 45,150 causal pairs per head, 40 MACs wide expanded against 72 absorbed.
    assert step.cost(1, 300, "h100-sxm", "fused").macs == 37_572_992
    assert chosen[1, 300, "fused"] == chosen[1, 40, "fused"] == "expanded"


def test_deepseek_v3_shaped_prefill_bytes_are_the_least() -> None:
    """The V3-shaped config (q_lora_rank, a dense first layer, a shared expert, expert-choice bias): its
    prefill reads and writes the least bytes of the closed form in either form, whole graph and fused."""
    cfg = load_config(str(CONFIGS / "small-deepseek-v3.json"))
    step = price_phase(cfg, "prefill", [H100], 1, 16)
    assert step.alternative is not None
    for batch, prompt in ((1, 16), (1, 40)):
        least = least_step_bytes(cfg.raw, batch, 0, prompt, cfg.shape.dtype_bytes)
        for mode in ("fused", "whole_graph"):
            expanded, absorbed = step._own_cost(batch, prompt, "h100-sxm", mode), step.alternative.cost(
                batch, prompt, "h100-sxm", mode)
            assert expanded.bytes == absorbed.bytes == step.cost(batch, prompt, "h100-sxm", mode).bytes == least
            assert expanded.macs == _prefill_macs(cfg.raw, batch, prompt, absorbed=False)
            assert absorbed.macs == _prefill_macs(cfg.raw, batch, prompt, absorbed=True)
