"""fp4 activations (W4A4, passes/quantize_fp4.py): block-scaled contractions with exact bytes and FLOPs, priced
at the fp4 tensor peak, or without one at the fastest unit that runs e2m1 codes exactly (targets/peaks.py)."""

from __future__ import annotations

import copy
import glob
import os

import pytest
from test_quantize import ACTIVATIONS, LINEAR, K, N, _run

from solar.backends.cost import CostModel, Peaks
from solar.frontends.llm_quantization import config_quantization
from solar.ir import attr_names
from solar.ir.dtypes import DType
from solar.ir.printer import print_module
from solar.passes.fuse import Fuse
from solar.passes.lift_einsum import LiftEinsum
from solar.passes.quantize import Quantize, QuantizeError, QuantizeOptions, check_options
from solar.targets.loader import load_target
from solar.targets.vocabulary import PeakUnavailable

TOKENS = 64  # the batch B of LINEAR


def _w4a4(fmt: str) -> tuple[str, CostModel]:
    module = _run(LINEAR, LiftEinsum(), Quantize(weights=fmt, activations=fmt), Fuse())
    return print_module(module), CostModel(module)


@pytest.mark.parametrize(("fmt", "block", "scale_bytes", "tensor_scales"), [
    ("nvfp4", 16, 1, 2),  # e4m3 scales per 16, one f32 per tensor for the weight and the input
    ("mxfp4", 32, 1, 0),  # e8m0 scales per 32
])
def test_w4a4_linear_is_one_block_scaled_contraction(fmt: str, block: int, scale_bytes: int, tensor_scales: int):
    text, model = _w4a4(fmt)
    assert '"iab,jab,ia,ja->ij"' in text and "block_scaled = true" in text
    [group] = model.groups
    # The MMA's FLOPs on e2m1 codes, nothing else on the tensor cores.
    assert dict(group.flops_tensor) == {DType.F4E2M1: 2 * TOKENS * N * K}
    # DRAM: the weight's codes and block scales, the per-tensor scales, x read and y written; the activation's
    # codes and scales stay in the group.
    assert group.total_bytes == N * K // 2 + N * K // block * scale_bytes + 4 * tensor_scales + ACTIVATIONS
    # The activation's quantization, counted: |x| and the block's max (and ÷ the input's tensor scale) per
    # element, a multiply per block scale, x ÷ its scale (÷ the tensor scale) per element; the rescale
    # epilogue multiplies each output by the tensor scales.
    elements = TOKENS * K
    per_tensor = tensor_scales // 2
    quantize = elements * (2 + per_tensor) + elements // block + elements * (1 + per_tensor)
    rescale = TOKENS * N * tensor_scales
    assert sum(group.flops_vector.values()) == quantize + rescale


def test_w4a4_prices_at_the_fp4_peak_or_the_fastest_exact_unit():
    """B200 runs e2m1 on its fp4 tensor cores (9 PFLOP/s); H100 has none: fp8 (1,979 TFLOP/s); A100 has no
    fp8 either, and its int8 tensor cores (624 TOP/s, e2m1 doubled is an integer of ±12 at most) beat bf16
    (312): a bound at bf16 would exceed what an int8 kernel takes. L40S's int8 figure is unknown, so no bound."""
    expected = {"b200": ("fp4_tensor", 9000e12), "h100": ("fp8_tensor", 1979e12), "a100": ("int8_tensor", 624e12),
                "tpu-v5e": ("int8_tensor", 393e12)}
    for name, (field, rate) in expected.items():
        choice = Peaks(load_target(name)).choice(DType.F4E2M1, True)
        assert (choice.field, choice.flop_per_s) == (field, rate)
    with pytest.raises(PeakUnavailable, match="int8_tensor is unknown"):
        load_target("l40s").select_peak("f4e2m1", contraction=True)
    _, model = _w4a4("nvfp4")
    [group] = model.groups
    for name, (_, rate) in expected.items():
        if name == "tpu-v5e":  # its FP32 vector figure (the quantization's) is unknown
            continue
        timing = Peaks(load_target(name)).time(group)
        assert timing.tensor_s == pytest.approx(2 * TOKENS * N * K / rate, rel=1e-12)  # the tensor cores' time


TARGET_DIR = os.path.dirname(load_target.__code__.co_filename)  # targets/: the shipped target files
TARGETS = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(TARGET_DIR, "*.yaml")))


@pytest.mark.parametrize("name", TARGETS)
def test_an_fp4_contraction_is_never_priced_below_a_unit_that_runs_it(name: str):
    """Every shipped target: the figure chosen is at least each of fp4, fp8, int8 and bf16 tensor that the
    target gives, or there is none because one of them is unknown (it might be the fastest)."""
    target = load_target(name)
    figures = [target.figures.get(f) for f in ("fp4_tensor", "fp8_tensor", "int8_tensor", "bf16_tensor")]
    try:
        chosen = target.select_peak("f4e2m1", contraction=True).flop_per_s
    except PeakUnavailable:
        assert any(f is not None and f.status == "unknown" for f in figures)
        return
    assert all(chosen >= f.value for f in figures if f is not None and f.value is not None)


def test_w4a4_needs_matching_weights():
    for weights in ("int4", "fp8", "mxfp4", "none"):
        with pytest.raises(QuantizeError, match=f"nvfp4 activations need nvfp4 weights .* not {weights}"):
            check_options(QuantizeOptions(weights, activations="nvfp4"))
    check_options(QuantizeOptions("mxfp4", activations="mxfp4"))


def test_w4a4_experts_are_gathered_packed_and_contracted_in_fp4():
    """tiny-mixtral-batched (hidden 32, experts 64 wide, 4 experts, top 2, 2 layers): at batch 1 every
    projection, the router and the two routed experts contract e2m1 codes; attention stays f32."""
    pytest.importorskip("transformers")
    from solar.bench.llm_serving import lifted
    from solar.frontends.llm_models import export_phase, load_config

    cfg = load_config(os.path.join(os.path.dirname(__file__), "data", "hf_configs", "tiny-mixtral-batched.json"))
    exported = export_phase(cfg, "decode", 2, 16, 2)
    packed, _ = lifted(copy.deepcopy(exported.module), QuantizeOptions("mxfp4", activations="mxfp4",
                                                                       exclude=("lm_head",)))
    scaled = [op for op in packed.entry.walk() if op.attrs.get(attr_names.BLOCK_SCALED)]
    assert len(scaled) == 2 * 7  # q, k, v, o, the router, gate_up, down
    work = CostModel(packed, values={"BATCH": 1, "CONTEXT": 16}).whole_graph()
    per_layer = 32 * 32 + 2 * 16 * 32 + 32 * 32 + 4 * 32 + 2 * (2 * 64 * 32 + 32 * 64)
    assert work.flops_tensor[DType.F4E2M1] == 2 * 2 * per_layer


def test_a_compressed_tensors_nvfp4_checkpoint_is_w4a4():
    scheme = {"weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16},
              "input_activations": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}}
    raw = {"quantization_config": {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
                                   "config_groups": {"group_0": scheme}}}
    options = config_quantization(raw)
    assert options is not None and (options.weights, options.activations) == ("nvfp4", "nvfp4")
