"""solar-llm against closed forms: real Hugging Face architectures built from configs at full size on the
meta device (nothing downloaded), exported, lifted and priced (docs/llm.md)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")

from solar.bench.llm_report import LlmRequest, analyse_llm, analysis_json
from solar.bench.llm_serving import lifted, model_memory, price_phase, serving_point
from solar.frontends.llm_models import LlmError, export_phase, load_config
from solar.ir.ops import EinsumOp
from solar.targets.loader import load_target

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
H100 = load_target("h100")


def _cfg(name: str) -> str:
    return str(CONFIGS / name)


def _attention_macs(module, kernel_prefix: str = "scaled_dot_product_attention") -> int:
    """MACs of the attention kernels' einsums (scores and weighted values), from their counts."""
    total = 0
    for op in module.entry.walk():
        if isinstance(op, EinsumOp) and op.symbol.startswith(kernel_prefix):
            total += op.attrs["counts"]["macs"]
    return total


def test_sliding_window_counts_only_live_pairs():
    # Mistral's window 16 at sequence 64 keeps Σ_i min(i + 1, 16) = 904 of the 4,096 query-key pairs.
    cfg = load_config(_cfg("tiny-mistral.json"))
    exported = export_phase(cfg, "prefill", 1, 64, 1, all_logits=True)
    module, remarks = lifted(exported.module)
    pairs = sum(min(i + 1, 16) for i in range(64))
    assert pairs == 904
    s = cfg.shape
    # Two products (Q·K and P·V) per live pair, per head, over the head size.
    assert _attention_macs(module) == 2 * s.heads * pairs * s.head_dim
    assert remarks == []


def test_llama2_7b_decode_is_exact():
    cfg = load_config(_cfg("llama-2-7b.json"))
    s = cfg.shape
    step = price_phase(cfg, "decode", [H100], 4, 64)
    assert sorted(step.twins) == [2, 3]
    memory = model_memory(cfg)
    embed = s.vocab * s.hidden * s.dtype_bytes
    norms = (2 * s.layers + 1) * s.hidden * s.dtype_bytes
    linear_params = (memory.weight_bytes - embed - norms) // s.dtype_bytes
    assert memory.weight_bytes == 6_738_415_616 * 2  # Llama-2-7B's published parameter count, in f16
    batch, context = 3, 100
    cost = step.cost(batch, context, "h100-sxm", "whole_graph")
    attention = 2 * s.layers * batch * s.heads * (context + 1) * s.head_dim  # P + 1 keys per new token
    assert cost.macs == batch * linear_params + attention
    kv_token = s.kv_bytes_per_token
    inv_freq = (s.head_dim // 2) * 4  # the rotary frequencies, f32
    expected = (memory.weight_bytes - embed + s.hidden * s.dtype_bytes  # weights; one embedding row
                + batch * 8 + inv_freq  # token ids, rotary frequencies
                + batch * context * kv_token  # the cache, read once
                + batch * kv_token  # the new token's keys and values, appended in place
                + batch * s.vocab * s.dtype_bytes)  # the last position's logits
    assert cost.bytes == expected


@functools.cache
def _llama3_prefill():
    """Llama-3-8B's prefill twins, exported and priced once for the tests that share them."""
    cfg = load_config(_cfg("llama-3-8b.json"))
    return cfg, price_phase(cfg, "prefill", [H100], 2, 128)


def test_gqa_llama3_prefill_causal_attention_closed_form():
    cfg, step = _llama3_prefill()
    s = cfg.shape
    assert (s.heads, s.kv_heads) == (32, 8)
    batch, prompt = 2, 100
    memory = model_memory(cfg)
    embed = s.vocab * s.hidden * s.dtype_bytes
    lm_head = s.vocab * s.hidden
    norms = (2 * s.layers + 1) * s.hidden * s.dtype_bytes
    linear_params = (memory.weight_bytes - embed - norms) // s.dtype_bytes
    causal_pairs = prompt * (prompt + 1) // 2
    attention = 2 * s.layers * batch * s.heads * causal_pairs * s.head_dim
    cost = step.cost(batch, prompt, "h100-sxm", "fused")
    # Only the last position's logits, as generate computes them.
    assert cost.macs == batch * prompt * (linear_params - lm_head) + batch * lm_head + attention


def test_json_points_and_figures(tmp_path):
    analysis = analyse_llm(LlmRequest(_cfg("tiny-llama.json"), [H100], batches=[1, 4], prompts=[32],
                                      contexts=[64], validate=False))
    doc = analysis_json(analysis)
    assert doc["version"] == 1
    points = doc["points"]
    assert len(points) == 2 * 3 * 2  # phases × modes × batches
    for p in points:
        assert {"phase", "batch", "prompt", "context", "target", "mode", "macs", "flops", "bytes",
                "weight_bytes", "kv_cache_bytes", "time_s", "bound", "fits"} <= set(p)
        assert p["bound"] in ("memory", "compute") and p["fits"] is True
    decode = [p for p in points if p["phase"] == "decode" and p["batch"] == 4]
    s = analysis.config.shape
    assert all(p["kv_cache_bytes"] == 4 * 65 * s.kv_bytes_per_token for p in decode)
    assert doc["warnings"] == []  # 65 tokens, within max_position_embeddings 512
    json.dumps(doc)


@pytest.mark.parametrize("text, message", [
    ("{not json", "not JSON"),
    ('{"model_type": "no-such-model", "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, '
     '"vocab_size": 16}', "unknown model_type 'no-such-model'"),
    ('{"model_type": "llama", "hidden_size": 8}', "missing field 'num_hidden_layers'"),
])
def test_bad_configs(tmp_path, text, message):
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(LlmError, match=message):
        load_config(str(path))


def test_bad_sizes_and_tensor_parallel():
    with pytest.raises(LlmError, match="--tensor-parallel 3 does not divide the 4 attention heads"):
        analyse_llm(LlmRequest(_cfg("tiny-llama.json"), [H100], tensor_parallel=3, validate=False))
    with pytest.raises(LlmError, match="sizes must be positive"):
        analyse_llm(LlmRequest(_cfg("tiny-llama.json"), [H100], batches=[0], validate=False))


def test_model_that_does_not_fit_one_layer():
    warnings: list[str] = []
    with pytest.raises(LlmError, match=r"one layer needs .* GB per chip .* more than h100-sxm's 80 GB"):
        analyse_llm(LlmRequest(_cfg("llama-2-7b.json"), [H100], batches=[4096], contexts=[1 << 20],
                               phases=("decode",), validate=False), warn=warnings.append)
    # A context beyond max_position_embeddings is a warning, heard before the checks that follow it.
    assert warnings == [f"{_cfg('llama-2-7b.json')}: 1048577 tokens (the longest prompt, or context + generated) "
                        "are beyond max_position_embeddings 4096; priced as asked"]


def test_eager_mixtral_names_the_option_that_exports():
    cfg = load_config(_cfg("tiny-mixtral.json"))
    with pytest.raises(LlmError, match=r"modeling_mixtral\.py:\d+: error: .*experts_implementation"):
        export_phase(cfg, "prefill", 2, 8, 1)


def test_cat_onto_an_empty_cache_lowers():
    from solar.frontends.torch_export import translate_problem

    tr = translate_problem(str(Path(__file__).parent / "data" / "empty_cache_model.py"), "none")
    ops = [op.opname for op in tr.module.entry.walk()]
    assert "solar.concat" not in ops  # appending to nothing is the appended tensor itself
    assert all(0 not in (a.type.shape if a.type else ()) for a in tr.module.entry.args)


def test_moe_decode_reads_the_least_any_routing_allows():
    # batched_mm experts: each token through its top-k experts (exact FLOPs); the weights read are k
    # experts per layer whatever the batch (every token may pick the same k), so the batch adds only its
    # own tokens' bytes. The uniform-routing figure is reported apart, as an estimate.
    cfg = load_config(_cfg("tiny-mixtral-batched.json"))
    s = cfg.shape
    step = price_phase(cfg, "decode", [H100], 8, 16)
    memory = model_memory(cfg)
    context = 10
    one, four = (step.cost(b, context, "h100-sxm", "whole_graph").bytes for b in (1, 4))
    # One embedding row whatever the batch (every token may be the same id), like the experts.
    per_token = 8 + (context + 1) * s.kv_bytes_per_token + s.vocab * 4
    assert four - one == 3 * per_token
    embed = s.vocab * s.hidden * 4
    inv_freq = (s.head_dim // 2) * 4
    least = memory.weight_bytes - s.layers * (s.experts - s.top_k) * memory.expert_bytes
    assert one == least - embed + s.hidden * 4 + per_token + inv_freq
    point = serving_point(step, cfg, memory, H100, "whole_graph", 4, context)
    estimate = point.as_record()["moe_uniform_routing_estimate"]
    assert estimate["experts_read_per_layer"] == pytest.approx(4 * (1 - (1 - 2 / 4) ** 4))
    assert estimate["least_weight_bytes_read"] == least


def _window_pairs(length: int, window: int) -> int:
    """Live query-key pairs of a causal sliding window: query i sees keys i − W + 1 .. i (HF's
    `kv_idx > q_idx - sliding_window`), Σ_i min(i + 1, W)."""
    full = min(length, window)
    return full * (full + 1) // 2 + (length - full) * window


def test_mistral_7b_sliding_window_at_full_size():
    """Mistral-7B (window 4096) past its window: a prefill of 8,192 tokens counts Σ min(i + 1, W) live
    pairs per head; a decode step at context P ≥ W attends min(P + 1, W) keys, and HF's DynamicCache of a
    sliding layer keeps only the last W − 1 tokens, so the step reads W − 1 cached tokens and writes one."""
    cfg = load_config(_cfg("mistral-7b.json"))
    s = cfg.shape
    window = s.sliding_window
    assert window == 4096 and (s.heads, s.kv_heads) == (32, 8)
    # Mistral-7B-v0.1's config (dynamic cache, the default): every field the counts below depend on.
    assert (s.layers, s.hidden, s.vocab, s.dtype, cfg.cache) == (32, 4096, 32000, torch.bfloat16, "dynamic")
    assert cfg.raw["intermediate_size"] == 14336
    memory = model_memory(cfg)
    embed = s.vocab * s.hidden * s.dtype_bytes
    lm_head = s.vocab * s.hidden
    norms = (2 * s.layers + 1) * s.hidden * s.dtype_bytes
    linear_params = (memory.weight_bytes - embed - norms) // s.dtype_bytes
    assert memory.weight_bytes == 7_241_732_096 * 2  # Mistral-7B's published parameter count, in bf16
    assert _window_pairs(8192, window) == 25_167_872
    prefill = price_phase(cfg, "prefill", [H100], 2, 8192)
    for batch, prompt in ((1, 8192), (2, 5000)):
        cost = prefill.cost(batch, prompt, "h100-sxm", "fused")
        attention = 2 * s.layers * batch * s.heads * _window_pairs(prompt, window) * s.head_dim
        assert cost.macs == batch * prompt * (linear_params - lm_head) + batch * lm_head + attention
    decode = price_phase(cfg, "decode", [H100], 2, 8192)
    kv_token = s.kv_bytes_per_token
    for batch, context in ((1, 8192), (3, 5000)):
        cost = decode.cost(batch, context, "h100-sxm", "whole_graph")
        keys = min(context + 1, window)
        assert cost.macs == batch * linear_params + 2 * s.layers * batch * s.heads * keys * s.head_dim
        assert cost.bytes == (memory.weight_bytes - embed + s.hidden * s.dtype_bytes + batch * 8
                              + (s.head_dim // 2) * 4  # one embedding row (ids may repeat), ids, rotary freqs
                              + batch * (window - 1) * kv_token  # the window's cached tokens, read once
                              + batch * kv_token + batch * s.vocab * s.dtype_bytes)  # the new token, logits
        # What the cache holds after the step: W − 1 tokens per sliding layer, not the P + 1 passed through.
        point = serving_point(decode, cfg, memory, H100, "whole_graph", batch, context)
        assert point.kv_cache_bytes == batch * (window - 1) * kv_token
        assert point.fits is True


def test_llama3_prefill_fused_is_never_below_the_whole_graph():
    """Issue 37: batch 1, prompt 512 on an H100. The twins' one group spans every layer, memory-bound at 3
    layers and compute-bound at 32; scaling the twins' times gave a fused 4.50 ms under the whole graph's
    7.29 ms (1.6 PFLOP/s). Scaled by counts, the group's roofline is the whole graph's: compute-bound."""
    _, step = _llama3_prefill()
    fused = step.cost(1, 512, "h100-sxm", "fused")
    whole = step.cost(1, 512, "h100-sxm", "whole_graph")
    assert fused.flops == whole.flops and fused.bytes - whole.bytes == 16  # the two aranges' outputs
    assert fused.seconds >= whole.seconds == max(whole.tensor_s, whole.vector_s, whole.memory_s)
    assert fused.bound == "tensor" and fused.compute_bound and fused.seconds == pytest.approx(fused.tensor_s, rel=1e-6)
    assert 2 * fused.macs / fused.seconds <= H100.peak("bf16", "tensor") * (1 + 1e-9)  # never above the roof


def test_bf16_prefill_prices_every_product_on_bf16_tensor_cores():
    """A bf16 model's attention is two bf16 products (P in V's type, as FlashAttention runs it): at a 32k
    prompt every MAC is on the BF16 tensor cores, and the TTFT is their time, at least 2·MACs/peak."""
    _, step = _llama3_prefill()
    cost = step.cost(1, 32768, "h100-sxm", "fused")
    floor = 2 * cost.macs / H100.peak("bf16", "tensor")
    assert cost.tensor_s == pytest.approx(floor, rel=1e-9)
    assert cost.seconds >= floor and cost.seconds == pytest.approx(floor, rel=1e-6)  # 747 ms
