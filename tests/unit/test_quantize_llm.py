"""--quantize on a language model's steps at full size (meta device): the decode bytes of Llama-3-8B with
int4 weights (group 128, f16 scales) and an fp8 KV cache are the closed form of packed weights, scales,
the fp8 cache and the new token's writes (docs/quantization.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from solar.bench.llm_serving import model_memory, price_phase
from solar.frontends.llm_models import load_config
from solar.passes.quantize import QuantizeOptions
from solar.targets.loader import load_target
from solar.tools.solar_llm import run

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
        # The step is one fusion group (the dequantization kernels join it), in the twins and scaled to 32
        # layers alike (their kernels' symbols match across the twins).
        assert fused.bytes >= cost.bytes
        assert fused.seconds == pytest.approx(cost.seconds, rel=1e-6)


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


@pytest.mark.parametrize(("flags", "message"), [
    (["--weights", "int3"], "solar-llm: error: unknown --weights format 'int3': expected one of none, int8, int4, fp8, "
                            "nvfp4, mxfp4"),
    (["--kv-cache-dtype", "fp4"], "solar-llm: error: unknown --kv-cache-dtype format 'fp4'"),
    (["--weights", "nvfp4", "--group-size", "32"], "solar-llm: error: nvfp4 has blocks of 16 elements, not 32"),
    (["--group-size", "64"], "solar-llm: error: --group-size needs --weights"),
])
def test_solar_llm_refuses_bad_quantization_in_one_line(tmp_path, capsys, flags: list[str], message: str):
    out = tmp_path / "out.json"
    out.write_text("an earlier report")
    assert run([str(CONFIGS / "tiny-llama.json"), *flags, "--json", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1
    assert out.read_text() == "an earlier report"


def test_a_checkpoints_quantization_config_is_analysed_as_shipped(tmp_path):
    """A GPTQ config (int4, group 16) quantizes the projections of every layer; lm_head stays bf16. The
    weights figure: embeddings 2 · 128·32·2, per layer 9,216 projection weights at ½ B + an f16 scale per 16
    and two norms, the final norm."""
    config = json.loads((CONFIGS / "tiny-llama.json").read_text())
    config["quantization_config"] = {"quant_method": "gptq", "bits": 4, "group_size": 16, "sym": True}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    out = tmp_path / "out.json"
    assert run([str(path), "--phase", "decode", "--context", "64", "--no-validate", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["quantization"] == "weights=int4,group_size=16,exclude=lm_head"
    s = load_config(str(path)).shape
    per_layer = 9_216 // 2 + 9_216 // 16 * 2 + 2 * s.hidden * 2
    assert {p["weight_bytes"] for p in doc["points"]} == {2 * 128 * 32 * 2 + s.layers * per_layer + s.hidden * 2}
