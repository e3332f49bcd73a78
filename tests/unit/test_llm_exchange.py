"""What collectives carry under quantized activations (bench/llm_exchange.py), and one deployment evaluated
both ways, by the search's formulas and as solar-llm's exported serving points, giving the same figures for
every quantization option (fp8 and fp4 activations among them)."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("transformers")

from solar.bench.llm_deploy import Split, collectives
from solar.bench.llm_exchange import activation_bytes_per_token, exchange_of
from solar.bench.llm_quantized import quantized_memory
from solar.bench.llm_report import LlmRequest, analyse_llm
from solar.bench.llm_search import SearchRequest, search
from solar.bench.llm_serving import model_memory
from solar.bench.llm_slo import parse_quantize_options, parse_slo
from solar.frontends.llm_models import load_config
from solar.frontends.llm_quantization import config_quantization
from solar.passes.quantize import QuantizeOptions
from solar.targets.loader import load_target

DATA = os.path.join(os.path.dirname(__file__), "data", "hf_configs")
B200 = load_target("b200")
NVLINK = B200.require("nvlink_bandwidth") / 2  # bytes/s each way


def test_activation_bytes_per_token():
    # Llama-3-8B's hidden 4096 in bf16; fp8 codes; e2m1 codes with an e4m3 scale per 16 (nvfp4) or an e8m0
    # scale per 32 (mxfp4).
    assert [activation_bytes_per_token(4096, a, 2) for a in ("none", "fp8", "int8", "nvfp4", "mxfp4")] == \
        [8192, 4096, 4096, 2048 + 256, 2048 + 128]
    assert exchange_of(7168, 2, "fp8").as_record() == {"hidden_bytes_per_token": 14336,
                                                       "dispatch_bytes_per_token": 7168}
    with pytest.raises(ValueError, match="unknown activation format 'int4'"):
        activation_bytes_per_token(4096, "int4", 2)


def test_mixtral_8x7b_ep8_fp8_dispatch_is_fp8_and_combine_bf16():
    """Mixtral-8x7B at EP 8 with fp8 activations, 64 decode tokens: the dispatch sends each token's fp8
    codes, the combine its bf16 output, (N − 1)/N of each away, in each of the 32 MoE layers."""
    cfg = load_config(os.path.join(DATA, "mixtral-8x7b.json"))
    h = cfg.shape.hidden
    assert (h, cfg.shape.experts, cfg.shape.layers) == (4096, 8, 32)
    tokens = 64
    fp8 = collectives(cfg, Split(expert=8), B200, tokens, 32, "fp8")
    plain = collectives(cfg, Split(expert=8), B200, tokens, 32)
    rank_tokens = tokens // 8
    assert fp8.alltoall_bytes == pytest.approx(32 * rank_tokens * (h * 1 + h * 2) * 7 / 8, rel=1e-15)
    assert plain.alltoall_bytes == pytest.approx(32 * rank_tokens * (h * 2 + h * 2) * 7 / 8, rel=1e-15)
    assert fp8.alltoall_s == pytest.approx(fp8.alltoall_bytes / NVLINK, rel=1e-12)
    # TP's all-reduced partial sums and PP's residual stream stay bf16.
    tp = collectives(cfg, Split(tensor=4, pipeline=2), B200, tokens, 32, "fp8")
    assert tp.allreduce_bytes == 2 * 32 * tokens * h * 2 * 3 / 4 and tp.p2p_bytes == tokens * h * 2 / 4


def test_a_deepseek_v3_shaped_fp8_checkpoint_dispatches_fp8():
    """DeepSeek-V3 ships fp8 weights in 128 × 128 blocks with dynamic fp8 activations: analysed as shipped, its
    EP dispatch sends one byte an element and its combine the model's dtype (small-deepseek-v3: hidden 128,
    f32, two MoE layers)."""
    cfg = load_config(os.path.join(DATA, "small-deepseek-v3.json"))
    options = config_quantization({"quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic",
                                                           "weight_block_size": [128, 128]}})
    assert options is not None and (options.activations, options.group_size, options.block_rows) == ("fp8", 128, 128)
    memory = quantized_memory(cfg, model_memory(cfg), options)
    assert (memory.activations, memory.moe_layers) == ("fp8", 2)
    coll = collectives(cfg, Split(expert=4), load_target("h100"), 16, memory.moe_layers, memory.activations)
    assert coll.alltoall_bytes == 2 * (4 * 128 * 1 + 4 * 128 * 4) * 3 / 4 == 3840


# tiny-mixtral-batched.json: hidden 32, 2 layers of 4 experts (top 2), 4 heads (2 key-value), f32.
OPTIONS = ("none", "fp8+act=fp8", "int8+act=int8", "int4+g=16+kv=int8", "nvfp4+act=nvfp4", "mxfp4+act=mxfp4+kv=fp8")
DISPATCH = {"none": 128, "fp8+act=fp8": 32, "int8+act=int8": 32, "int4+g=16+kv=int8": 128, "nvfp4+act=nvfp4": 16 + 2,
            "mxfp4+act=mxfp4+kv=fp8": 16 + 1}


@pytest.mark.parametrize("name", OPTIONS)
def test_search_and_serving_point_agree(name: str):
    """TP 2 × PP 2 × EP 2, batch 8 (two micro-batches of 4), prompt 16, 3 tokens generated: the search's
    deployment and solar-llm's points of it agree on TTFT, TPOT, each chip's memory and the collectives,
    and these are the closed forms (the dispatch at the activations' format, the rest at f32)."""
    path = os.path.join(DATA, "tiny-mixtral-batched.json")
    cfg = load_config(path)
    option = parse_quantize_options(name)[0]
    prompt, generate, batch = 16, 3, 8
    result = search(cfg, SearchRequest(path, [B200], parse_slo("ttft=1s,tpot=1s"), 1.0, [option], prompt, generate,
                                       batches=[batch], tensor=[2], pipeline=[2], expert=[2]))
    (found,) = result.feasible
    assert found.split == Split(tensor=2, pipeline=2, expert=2, data=1)
    quantize = QuantizeOptions(option.weights, option.group_size, option.kv_cache, option.activations,
                               exclude=("lm_head",)) if option.active else None
    analysis = analyse_llm(LlmRequest(path, [B200], batches=[1, batch], prompts=[prompt], contexts=[prompt],
                                      generate=generate, tensor_parallel=2, pipeline_parallel=2, expert_parallel=2,
                                      validate=False, quantize=quantize))
    point = {(p.phase, p.batch): p for p in analysis.points if p.mode == "fused"}
    decode, prefill = point[("decode", batch)], point[("prefill", 1)]
    assert found.tpot_s == pytest.approx(decode.time_s, rel=1e-12)
    assert found.ttft_s == pytest.approx(prefill.time_s, rel=1e-12)
    assert found.collectives == decode.collectives
    assert (found.memory.weight_bytes, found.memory.kv_cache_bytes) == (decode.weight_bytes, decode.kv_cache_bytes)
    # The live hidden states (the prompt's, the larger) at f32 and the last stage's logits of a micro-batch / TP.
    assert found.memory.activation_bytes == prompt // 2 * 32 * 4 + 4 * 128 * 4 // 2
    assert decode.memory.activation_bytes == 4 // 2 * 32 * 4 + 4 * 128 * 4 // 2
    # A decode pass of a micro-batch of 4 tokens: per chip and each way.
    coll = decode.collectives
    assert coll.allreduce_bytes == 2 * 2 * (4 // 2) * 32 * 4 / 2  # 2 per layer, an EP rank's tokens, 1/2 away
    assert coll.p2p_bytes == 4 * 32 * 4 / 4  # one boundary, over the stage's 4 chips
    # Dispatch and combine in both MoE layers: a rank's 2 tokens over its 2 TP chips, half to the other rank.
    assert coll.alltoall_bytes == pytest.approx(2 * (DISPATCH[name] + 128) / 2, rel=1e-15)
    assert coll.alltoall_s == pytest.approx(coll.alltoall_bytes / NVLINK, rel=1e-12)
    assert found.as_record()["alltoall_bytes"] == coll.alltoall_bytes
