"""--quantize on a language model's steps at full size (meta device): the decode bytes of Llama-3-8B with
int4 weights (group 128, f16 scales) and an fp8 KV cache are the closed form of packed weights, scales,
the fp8 cache and the new token's writes (docs/quantization.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers")

from solar.bench.llm_serving import model_memory, price_phase
from solar.frontends.llm_models import load_config
from solar.passes.quantize import QuantizeOptions
from solar.targets.loader import load_target

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
H100 = load_target("h100")


def test_llama3_8b_int4_fp8_cache_decode_bytes_at_full_size():
    cfg = load_config(str(CONFIGS / "llama-3-8b.json"))
    s = cfg.shape
    options = QuantizeOptions("int4", 128, "fp8", exclude=("lm_head",))
    step = price_phase(cfg, "decode", [H100], 4, 64, quantize=options)
    memory = model_memory(cfg)
    embed = s.vocab * s.hidden * s.dtype_bytes
    norms = (2 * s.layers + 1) * s.hidden * s.dtype_bytes
    linear_params = (memory.weight_bytes - embed - norms) // s.dtype_bytes
    quantized = linear_params - s.vocab * s.hidden  # every projection of the layers; lm_head stays bf16
    assert quantized == 32 * (4096 * (4096 + 2 * 1024 + 4096) + 3 * 4096 * 14336)
    packed = quantized // 2  # int4: two codes a byte
    scales = quantized // 128 * 2  # one f16 scale per 128 input features
    cache_args = 2 * s.layers

    def expected(batch: int, context: int) -> tuple[int, int]:
        attention = 2 * s.layers * batch * s.heads * (context + 1) * s.head_dim
        inv_freq = (s.head_dim // 2) * 4
        nbytes = (packed + scales + s.vocab * s.hidden * s.dtype_bytes + norms  # weights as stored
                  + s.hidden * s.dtype_bytes + batch * 8 + inv_freq  # the embedding row, ids, rotary
                  + batch * context * s.kv_bytes_per_token // 2  # the cache in fp8, read once
                  + cache_args * 4  # one f32 scale per cache tensor
                  + batch * s.kv_bytes_per_token // 2  # the new token's keys and values, in fp8
                  + batch * s.vocab * s.dtype_bytes)  # the last position's logits
        return batch * linear_params + attention, nbytes

    for batch, context in ((1, 8192), (4, 100)):
        cost = step.cost(batch, context, "h100-sxm", "whole_graph")
        assert (cost.macs, cost.bytes) == expected(batch, context)
        fused = step.cost(batch, context, "h100-sxm", "fused")
        assert fused.bytes >= cost.bytes


def test_mixture_of_experts_reads_the_routed_experts_packed():
    """Experts are gathered per token: their codes and scales are gathered alike and dequantized after the
    gather, so a decode step at batch 1 reads its top-2 experts packed. tiny-mixtral-batched: hidden 32,
    experts' width 64, 4 experts, top 2, f32, 2 layers."""
    import copy

    from solar.backends.cost import CostModel
    from solar.bench.llm_serving import lifted
    from solar.frontends.llm_models import export_phase

    cfg = load_config(str(CONFIGS / "tiny-mixtral-batched.json"))
    exported = export_phase(cfg, "decode", 2, 16, 2)
    options = QuantizeOptions("int4", 16, exclude=("lm_head",))
    plain, _ = lifted(copy.deepcopy(exported.module))
    packed, _ = lifted(copy.deepcopy(exported.module), options)
    experts = [a for a in packed.entry.args if "experts" in a.name and not a.name.endswith("_scale")]
    assert len(experts) == 4 and {a.type.dtype.spelling for a in experts} == {"i4"}
    at = {"BATCH": 1, "CONTEXT": 16}
    saved = CostModel(plain, values=at).whole_graph().total_bytes - \
        CostModel(packed, values=at).whole_graph().total_bytes
    per_weight = 4 - (0.5 + 2 / 16)  # f32 → int4 codes and an f16 scale per 16
    routed = 2 * (2 * 64 * 32 + 32 * 64)  # two experts' gate_up and down projections
    projections = 32 * 32 + 16 * 32 + 16 * 32 + 32 * 32 + 4 * 32  # q, k, v, o and the router
    assert saved == 2 * (routed + projections) * per_weight
