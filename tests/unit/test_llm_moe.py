"""Mixtures of experts in solar-llm, at full size on the meta device (nothing downloaded): Qwen2-MoE (routed
experts plus an always-on shared expert) in decode and prefill, and a Mixtral prefill. Each step's MACs are
checked against parameter counts from the config (every token through its top-k routed experts and the
shared expert), and its bytes against the weights the least routing reads (k routed experts per layer, the
shared expert and the dense parts) plus the cache and the new tokens (docs/llm.md, mixture of experts)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("transformers.models.qwen2_moe", reason="this transformers has no Qwen2-MoE")

from solar.bench.llm_serving import Memory, model_memory, price_phase, serving_point
from solar.frontends.llm_models import LlmConfig, load_config
from solar.targets.loader import load_target

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
H100 = load_target("h100")


@pytest.fixture(scope="module")
def qwen() -> tuple[LlmConfig, Memory]:
    cfg = load_config(str(CONFIGS / "qwen1.5-moe-a2.7b.json"))
    return cfg, model_memory(cfg)


def _per_token_layer_macs(cfg: LlmConfig) -> int:
    """One token through one Qwen2-MoE layer's products: attention projections, the router, the shared
    expert and its gate, and k routed experts (gate, up and down each)."""
    raw, s = cfg.raw, cfg.shape
    h, d = s.hidden, s.head_dim
    attention = h * s.heads * d + 2 * h * s.kv_heads * d + s.heads * d * h
    router = s.experts * h
    shared = 3 * h * raw["shared_expert_intermediate_size"] + h  # and its gate, a 1-wide product
    routed = s.top_k * 3 * h * raw["moe_intermediate_size"]
    return attention + router + shared + routed


def test_qwen2_moe_parameters_from_the_config(qwen):
    cfg, memory = qwen
    raw, s = cfg.raw, cfg.shape
    h, d = s.hidden, s.head_dim
    biases = s.heads * d + 2 * s.kv_heads * d  # q, k and v have biases
    layer = (_per_token_layer_macs(cfg) - s.top_k * 3 * h * raw["moe_intermediate_size"] + biases + 2 * h
             + s.experts * 3 * h * raw["moe_intermediate_size"])
    params = s.layers * layer + 2 * s.vocab * h + h  # untied embedding and LM head, the final norm
    assert params == 14_315_784_192  # Qwen1.5-MoE-A2.7B's 14.3B parameters
    assert memory.weight_bytes == params * 2  # bf16
    assert memory.expert_bytes == 3 * h * raw["moe_intermediate_size"] * 2


def _least_weights_read(cfg: LlmConfig, memory: Memory) -> int:
    """Every weight but the embedding table (a gather of the tokens' rows) and the E − k routed experts per
    layer that some routing leaves unread."""
    s = cfg.shape
    return memory.weight_bytes - s.vocab * s.hidden * 2 - s.layers * (s.experts - s.top_k) * memory.expert_bytes


def test_qwen2_moe_decode_is_exact(qwen):
    cfg, memory = qwen
    s = cfg.shape
    step = price_phase(cfg, "decode", [H100], 4, 64)
    assert sorted(step.twins) == [2, 3] and step.fixed_batch_reason is None
    batch, context = 3, 100
    cost = step.cost(batch, context, "h100-sxm", "whole_graph")
    attention = 2 * s.layers * batch * s.heads * (context + 1) * s.head_dim  # P + 1 keys per new token
    assert cost.macs == batch * (s.layers * _per_token_layer_macs(cfg) + s.vocab * s.hidden) + attention
    kv_token = s.kv_bytes_per_token
    assert kv_token == 2 * s.layers * s.kv_heads * s.head_dim * 2
    expected = (_least_weights_read(cfg, memory) + s.hidden * 2  # one embedding row (ids may repeat)
                + batch * 8 + (s.head_dim // 2) * 4  # token ids, rotary frequencies (f32)
                + batch * context * kv_token  # the cache, read once
                + batch * kv_token  # the new token's keys and values, appended in place
                + batch * s.vocab * 2)  # the last position's logits
    assert cost.bytes == expected


def test_qwen2_moe_prefill_routes_batch_times_prompt_tokens(qwen):
    cfg, memory = qwen
    s = cfg.shape
    step = price_phase(cfg, "prefill", [H100], 2, 32)
    assert "B·S tokens" in (step.fixed_batch_reason or "")
    batch, prompt = 2, 20
    tokens = batch * prompt
    cost = step.cost(batch, prompt, "h100-sxm", "whole_graph")
    attention = 2 * s.layers * batch * s.heads * prompt * (prompt + 1) // 2 * s.head_dim  # causal pairs
    assert cost.macs == tokens * s.layers * _per_token_layer_macs(cfg) + batch * s.vocab * s.hidden + attention
    expected = (_least_weights_read(cfg, memory) + s.hidden * 2 + tokens * (8 + s.kv_bytes_per_token)
                + (s.head_dim // 2) * 4 + batch * s.vocab * 2)
    assert cost.bytes == expected
    # The uniform-routing figure is an estimate over the B·S tokens, apart from the bound.
    point = serving_point(step, cfg, memory, H100, "whole_graph", batch, prompt)
    estimate = point.as_record()["moe_uniform_routing_estimate"]
    assert estimate["experts_read_per_layer"] == pytest.approx(s.experts * (1 - (1 - s.top_k / s.experts) ** tokens))
    assert estimate["least_weight_bytes_read"] == memory.weight_bytes - s.layers * (s.experts - s.top_k) * \
        memory.expert_bytes


def test_moe_prefill_report_exports_per_batch():
    # Mixtral's prefill through solar-llm: one export per batch asked (the batch a number), exact MACs at
    # each, and the same k experts' weights read whatever the batch.
    from solar.bench.llm_report import LlmRequest, analyse_llm, analysis_json

    analysis = analyse_llm(LlmRequest(str(CONFIGS / "tiny-mixtral-batched.json"), [H100], phases=("prefill",),
                                      batches=[1, 3], prompts=[5], validate=False))
    s = analysis.config.shape
    doc = analysis_json(analysis)
    points = {p["batch"]: p for p in doc["points"] if p["mode"] == "whole-graph"}
    per_token = s.layers * (2 * s.hidden * s.heads * s.head_dim + 2 * s.hidden * s.kv_heads * s.head_dim
                            + s.experts * s.hidden + s.top_k * 3 * s.hidden * analysis.config.raw["intermediate_size"])
    attention = 2 * s.layers * s.heads * 5 * 6 // 2 * s.head_dim
    for batch, p in points.items():
        assert p["macs"] == batch * (5 * per_token + s.vocab * s.hidden + attention)
    sequence = 5 * (8 + s.kv_bytes_per_token) + s.vocab * 4  # the one embedding row does not grow with B
    assert points[3]["bytes"] - points[1]["bytes"] == 2 * sequence
    assert any("B·S tokens" in n for n in doc["notes"])


def test_moe_prefill_validates_against_the_model():
    # The routed prefill (B·S tokens through their top-k experts, batched_mm) runs through the IR executor
    # and matches the model with seeded weights.
    from solar.frontends.llm_validate import validate_step

    check = validate_step(load_config(str(CONFIGS / "tiny-mixtral-batched.json")), "prefill")
    assert check.report.ok, check.report.error
    assert len(check.report.outputs) == 1 + 2 * 2  # the logits, each layer's keys and values


def test_mixtral_8x7b_decode_is_exact():
    """Mixtral-8×7B at full size: 46.7B parameters, eight experts and top-2 routing, no shared expert; a
    decode step's MACs route each token through two experts, its bytes read two experts' weights per layer."""
    cfg = load_config(str(CONFIGS / "mixtral-8x7b.json"))
    memory = model_memory(cfg)
    s = cfg.shape
    h, d, inter = s.hidden, s.head_dim, cfg.raw["intermediate_size"]
    attention = h * s.heads * d + 2 * h * s.kv_heads * d + s.heads * d * h
    expert = 3 * h * inter
    assert (s.experts, s.top_k) == (8, 2)
    params = s.layers * (attention + s.experts * h + s.experts * expert + 2 * h) + 2 * s.vocab * h + h
    assert params == 46_702_792_704 and memory.weight_bytes == params * 2  # bf16
    assert memory.expert_bytes == expert * 2
    # Exported at test_llm_deploy.py's example (batch 16, context 1,025): the same step, exported once in a
    # process; every size stays a parameter, so the point below is priced alike from any example.
    step = price_phase(cfg, "decode", [H100], 16, 1025)
    batch, context = 2, 300
    cost = step.cost(batch, context, "h100-sxm", "whole_graph")
    per_token = s.layers * (attention + s.experts * h + s.top_k * expert) + s.vocab * h
    assert cost.macs == batch * per_token + 2 * s.layers * batch * s.heads * (context + 1) * d
    assert cost.bytes == (_least_weights_read(cfg, memory) + h * 2 + batch * 8 + (d // 2) * 4
                          + batch * (context + 1) * s.kv_bytes_per_token + batch * s.vocab * 2)


def test_moe_prefill_at_batch_1_exports_batch_1_only(monkeypatch):
    # The batch is a number in an MoE prefill's export: a batch-1 request exports batch 1, not also the
    # symbolic export's least batch, 2.
    from solar.bench import llm_serving
    from solar.bench.llm_report import LlmRequest, analyse_llm

    seen: list[int] = []
    real = llm_serving.export_phase

    def counting(cfg, phase, batch, *args, **kwargs):
        seen.append(batch)
        return real(cfg, phase, batch, *args, **kwargs)

    monkeypatch.setattr(llm_serving, "export_phase", counting)
    analyse_llm(LlmRequest(str(CONFIGS / "tiny-mixtral-batched.json"), [H100], phases=("prefill",), batches=[1],
                           prompts=[5], validate=False))
    assert seen == [1]
