"""Quantized models on chips without the quantized precision's tensor cores (bench/llm_precision.py): fp8 on
an A100 reads fp8 bytes and computes at the bf16 tensor peak, never at an fp8 figure the chip lacks, and says
so in a remark; fp4 activations take the fastest exact unit."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("transformers")

from solar.bench.llm_precision import peak_remarks
from solar.bench.llm_report import LlmRequest, analyse_llm
from solar.frontends.llm_quantization import config_quantization
from solar.passes.quantize import QuantizeOptions
from solar.targets.loader import load_target

DATA = os.path.join(os.path.dirname(__file__), "data", "hf_configs")
A100, H100, B200 = load_target("a100"), load_target("h100"), load_target("b200")


def test_peak_remarks_name_the_unit_used():
    fp8, w4a4 = QuantizeOptions("fp8", activations="fp8"), QuantizeOptions("mxfp4", activations="mxfp4")
    assert peak_remarks(fp8, [A100, H100, B200]) == [
        "a100 has no fp8 tensor cores: the fp8 activations' contractions are priced at its bf16 tensor peak "
        "(312 TFLOP/s), the fastest unit that runs f8e4m3 operands exactly"]
    assert peak_remarks(w4a4, [A100, B200]) == [
        "a100 has no fp4 tensor cores: the mxfp4 activations' contractions are priced at its int8 tensor peak "
        "(624 TOP/s), the fastest unit that runs f4e2m1 operands exactly"]
    # A100 has int8 tensor cores: W8A8 runs on them (624 TOP/s), nothing to say.
    assert peak_remarks(QuantizeOptions("int8", activations="int8"), [A100, H100, B200]) == []
    # Weight-only formats compute at the activations' precision: nothing to say.
    assert peak_remarks(QuantizeOptions("int4"), [A100]) == [] == peak_remarks(None, [A100])


def test_fp8_on_a100_computes_at_bf16_and_reads_fp8():
    """tiny-llama (bf16) prefill of 2 × 64 tokens: weight-only fp8 and fp8 activations keep A100's tensor time
    at the bf16 peak (the same as unquantized), while on an H100 fp8 activations run faster; both read the
    fp8 weights' bytes."""
    path = os.path.join(DATA, "tiny-llama.json")

    def priced(quantize: QuantizeOptions | None):  # type: ignore[no-untyped-def]
        analysis = analyse_llm(LlmRequest(path, [A100, H100], phases=("prefill",), batches=[2], prompts=[64],
                                          validate=False, quantize=quantize))
        step = analysis.steps["prefill"]
        return analysis, {t: step.cost(2, 64, t, "fused") for t in ("a100", "h100-sxm")}

    _, none = priced(None)
    _, weights = priced(QuantizeOptions("fp8", exclude=("lm_head",)))
    analysis, both = priced(QuantizeOptions("fp8", activations="fp8", exclude=("lm_head",)))
    assert weights["a100"].tensor_s == pytest.approx(none["a100"].tensor_s, rel=1e-12)
    assert both["a100"].tensor_s == pytest.approx(none["a100"].tensor_s, rel=1e-12)
    assert both["h100-sxm"].tensor_s < none["h100-sxm"].tensor_s
    # 4 layers of q, k, v, o (32×32, 16×32 twice, 32×32) and gate, up, down (64×32 each): 1 byte a weight and
    # an f32 scale per output channel, not 2 bytes a weight.
    saved = 4 * ((2 * 32 * 32 + 2 * 16 * 32 + 3 * 64 * 32) * (2 - 1) - (2 * 32 + 2 * 16 + 2 * 64 + 32) * 4)
    assert none["a100"].bytes - weights["a100"].bytes == saved
    assert analysis.remarks.count(peak_remarks(QuantizeOptions("fp8", activations="fp8"), [A100])[0]) == 1
    # W8A8 on A100: the projections at the int8 tensor peak (624 TOP/s), twice bf16's; attention and the head
    # stay bf16, so the step's tensor time lies strictly between half and all of bf16's.
    _, w8a8 = priced(QuantizeOptions("int8", activations="int8", exclude=("lm_head",)))
    assert none["a100"].tensor_s / 2 < w8a8["a100"].tensor_s < none["a100"].tensor_s


def test_a_compressed_tensors_w8a8_checkpoint_is_int8_by_int8():
    raw = {"quantization_config": {"quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "weights": {"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": True},
        "input_activations": {"num_bits": 8, "type": "int", "strategy": "token", "dynamic": True}}}}}
    options = config_quantization(raw)
    assert options is not None and (options.weights, options.activations, options.group_size) == ("int8", "int8", 0)
