"""Multi-head latent attention (DeepSeek-V2/V3) in solar-llm, from stock-shaped configs with no edit: the
complex rotary, the grouped experts kernel, the latent cache and a decode step priced in its absorbed form
(frontends/torch_mla.py): W_UK absorbed into the query, W_UV into the output, attention over the latent.
MACs and bytes are checked against closed forms of that form (the bytes the least any routing reads); the
cache is the latent (docs/llm.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("transformers")
pytest.importorskip("transformers.models.deepseek_v3", reason="this transformers has no DeepSeek-V3")

from solar.backends.sweep import CostSurface
from solar.bench.llm_serving import _at, lifted, model_memory, price_phase, serving_point
from solar.frontends.llm_models import export_phase, load_config
from solar.frontends.llm_validate import reduced_config, validate_step
from solar.targets.loader import load_target

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
H100 = load_target("h100")


def _absorbed_decode_macs(raw: dict[str, Any], batch: int, context: int) -> int:
    """One decode step's MACs, absorbed: per layer the query (direct, or through its low-rank `q_lora_rank`
    pair), the latent's down-projection, q_nope·W_UK, scores over the latent and rotary key (r + dr wide)
    and values over the latent (r) for P + 1 keys, the output through W_UV and o_proj; a dense MLP in the
    first `first_k_dense_replace` layers, then the router, the shared experts and k routed experts; the LM
    head of the one position kept."""
    h, heads, layers = raw["hidden_size"], raw["num_attention_heads"], raw["num_hidden_layers"]
    dn, dr, dv, r = raw["qk_nope_head_dim"], raw["qk_rope_head_dim"], raw["v_head_dim"], raw["kv_lora_rank"]
    q_rank = raw.get("q_lora_rank")
    query = h * heads * (dn + dr) if q_rank is None else h * q_rank + q_rank * heads * (dn + dr)
    keys = context + 1
    attention = (query + h * (r + dr) + heads * dn * r + heads * keys * (r + dr) + heads * keys * r
                 + heads * r * dv + heads * dv * h)
    dense = 3 * h * raw["intermediate_size"]
    moe = (h * raw["n_routed_experts"] + 3 * h * raw["moe_intermediate_size"] * raw["n_shared_experts"]
           + raw["num_experts_per_tok"] * 3 * h * raw["moe_intermediate_size"])
    first = raw["first_k_dense_replace"]
    per_token = layers * attention + first * dense + (layers - first) * moe + raw["vocab_size"] * h
    return batch * per_token


def least_step_bytes(raw: dict[str, Any], batch: int, cached: int, new: int, dtype_bytes: int) -> int:
    """The least DRAM bytes of a step of `new` tokens per sequence after `cached` ones (a decode step: 1
    after P; a prefill: S after 0) over the whole graph: every weight read once but the embedding table (one
    row gathered: the ids may repeat) and the E − k routed experts per MoE layer that some routing leaves
    unread (every token may pick the same k); the token ids and the rotary frequencies (f32); the latent
    cache read once and the new tokens' latents written; the last position's logits. Keys and values
    expanded from the latent (HF's prefill) stay on chip: a bound reads and writes only the latent.

    Per layer: the query (q_proj, or q_a_proj, its norm and q_b_proj under `q_lora_rank`), kv_a_proj_with_mqa
    (h → r + dr) and its norm, kv_b_proj whole (r → H·(dn + dv): absorbed, W_UK is its key rows and W_UV its
    value rows, both used), o_proj and the two norms. The first `first_k_dense_replace` layers a dense MLP;
    the others the shared experts, k routed experts and the router, which transformers keeps in f32
    (`_keep_in_fp32_modules_strict`), as DeepSeek-V3's expert-choice bias (its `e_score_correction_bias`,
    E f32 numbers added to the scores before the top-k)."""
    h, heads, layers = raw["hidden_size"], raw["num_attention_heads"], raw["num_hidden_layers"]
    dn, dr, dv, r = raw["qk_nope_head_dim"], raw["qk_rope_head_dim"], raw["v_head_dim"], raw["kv_lora_rank"]
    q_rank, experts, vocab = raw.get("q_lora_rank"), raw["n_routed_experts"], raw["vocab_size"]
    query = h * heads * (dn + dr) if q_rank is None else h * q_rank + q_rank + q_rank * heads * (dn + dr)
    attention = query + h * (r + dr) + r + r * heads * (dn + dv) + heads * dv * h + 2 * h
    dense = 3 * h * raw["intermediate_size"]
    experts_read = 3 * h * raw["moe_intermediate_size"] * (raw["n_shared_experts"] + raw["num_experts_per_tok"])
    first = raw["first_k_dense_replace"]
    router_f32 = experts * h + (experts if raw["model_type"] == "deepseek_v3" else 0)
    weights = (dtype_bytes * (layers * attention + first * dense + (layers - first) * experts_read
                              + h + vocab * h + h)  # the final norm, the LM head, one embedding row
               + 4 * (layers - first) * router_f32)
    latent_token = layers * (r + dr) * dtype_bytes  # one token's latent and rotary key, every layer
    return (weights + batch * new * 8 + dr // 2 * 4  # the token ids (int64), the rotary frequencies
            + batch * cached * latent_token + batch * new * latent_token  # the cache read, the new tokens' written
            + batch * vocab * dtype_bytes)  # the last position's logits


@pytest.mark.parametrize("name", ["tiny-deepseek-v2.json", "small-deepseek-v3.json"])
def test_decode_is_priced_absorbed(name: str) -> None:
    cfg = load_config(str(CONFIGS / name))
    raw, s = cfg.raw, cfg.shape
    step = price_phase(cfg, "decode", [H100], 2, 16)
    assert step.alternative is None  # absorbed alone: its least work (a prefill prices both forms)
    for batch, context in ((1, 16), (3, 40)):
        cost = step.cost(batch, context, "h100-sxm", "whole_graph")
        assert cost.macs == _absorbed_decode_macs(raw, batch, context)
        assert cost.bytes == least_step_bytes(raw, batch, context, 1, s.dtype_bytes)
    # The cache holds the latent and the rotary key: (r + dr) per layer and token, not expanded K and V.
    latent = s.layers * (raw["kv_lora_rank"] + raw["qk_rope_head_dim"]) * s.dtype_bytes
    assert s.kv_bytes_per_token == latent
    point = serving_point(step, cfg, model_memory(cfg), H100, "whole_graph", 3, 40)
    assert point.kv_cache_bytes == 3 * 41 * latent


@pytest.mark.parametrize("name", ["tiny-deepseek-v2.json", "small-deepseek-v3.json"])
@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_deepseek_validates_against_the_model(name: str, phase: str) -> None:
    """The reduced twin runs HF's code (complex rotary, expand_kv's writes into a fresh tensor, grouped
    experts; V3's interleaved rotary and group-limited routing) against the IR: the absorbed decode computes
    the same values."""
    check = validate_step(load_config(str(CONFIGS / name)), phase)
    assert check.report.ok, check.failure()
    assert check.report.outputs[0].max_abs_error < 1e-4  # f32 logits


def test_reduced_twins_derive_their_head_widths() -> None:
    """DeepSeek's configs derive qk_head_dim (dn + dr) and head_dim (dr) as they are built; the twin's are its
    own reduced widths', not the full model's copied back (V3's attention and rotary read them: its twin once
    failed to export)."""
    for name in ("small-deepseek-v3.json", "deepseek-v2-lite.json"):
        twin, _ = reduced_config(load_config(str(CONFIGS / name)))
        assert twin.qk_rope_head_dim < load_config(str(CONFIGS / name)).raw["qk_rope_head_dim"]
        assert twin.qk_head_dim == twin.qk_nope_head_dim + twin.qk_rope_head_dim
        assert twin.head_dim == twin.qk_rope_head_dim


def test_deepseek_v2_lite_latent_cache() -> None:
    """DeepSeek-V2-Lite's published config: 27 layers × (512 + 64) × 2 bytes = 31,104 B per token, against
    27 × 16 heads × (192-wide keys + 128-wide values) × 2 = 276,480 B expanded."""
    cfg = load_config(str(CONFIGS / "deepseek-v2-lite.json"))
    s = cfg.shape
    assert (s.experts, s.top_k, s.layers) == (64, 6, 27)
    assert s.kv_bytes_per_token == 31_104


def test_deepseek_v2_lite_decode_at_full_size_is_the_absorbed_closed_form() -> None:
    """DeepSeek-V2-Lite's stock config, unedited, at full width on meta: its dense first layer and a MoE
    layer (64 routed experts, top-6, 2 shared) priced absorbed equal the closed form of those two layers."""
    cfg = load_config(str(CONFIGS / "deepseek-v2-lite.json"))
    exported = export_phase(cfg, "decode", 2, 64, 2)
    assert exported.absorbed == 2
    module, remarks = lifted(exported.module)
    assert remarks == []
    cost = _at(CostSurface(module, [H100]), {exported.sizes["batch"]: 3, exported.sizes["context"]: 100},
               "h100-sxm", "whole_graph")
    assert cost.macs == _absorbed_decode_macs({**cfg.raw, "num_hidden_layers": 2}, 3, 100) == 1_132_001_280
    # Absorbed decode reads kv_b_proj's weight as two slices of one per-head view (W_UK for the query, W_UV
    # for the output): the whole graph reads all of it, 16 heads × 256 × 512 × 2 B = 4,194,304 B per layer.
    # It once read the larger half only, 2 × 2,097,152 B fewer than this.
    two_layers = {**cfg.raw, "num_hidden_layers": 2}
    assert cost.bytes == least_step_bytes(two_layers, 3, 100, 1, 2) == 749_236_120


def test_deepseek_v2_lite_prefill_validates_in_bf16() -> None:
    """The stock config's reduced twin in bf16, as `solar-llm deepseek-v2-lite.json` validates it: 4 of its
    512 logits differ beyond the bf16 tolerance from torch's bf16 run, which is itself up to 0.023 off the
    model's float64 run.
    The float64 run of the model decides such elements, and it once failed on HF's grouped experts kernel,
    which has no float64 (frontends/wide_grouped_mm.py): the stock config failed to validate."""
    check = validate_step(load_config(str(CONFIGS / "deepseek-v2-lite.json")), "prefill")
    assert check.report.ok, check.failure()
    logits = check.report.outputs[0]
    assert logits.shape == (2, 1, 256) and logits.max_abs_error > 0.01  # beyond atol: the float64 run decided
    assert "float64" in check.report.note
