"""--quantize (passes/quantize.py) and the sub-byte element types: exact bytes against each format's formula,
contractions priced at the precision of their operands, options refused in one line, and the new types
through the parser and printer."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solar.backends.cost import CostModel, Peaks
from solar.frontends.llm_config_checks import LlmError
from solar.frontends.llm_quantization import (
    config_quantization,
    quantized_bytes,
    quantized_kv_bytes_per_token,
)
from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.dtypes import DTYPES, DType
from solar.ir.ops import ModuleOp
from solar.ir.parser import parse_module
from solar.ir.pass_manager import PassContext, PassManager
from solar.ir.printer import print_module
from solar.passes.fuse import Fuse
from solar.passes.lift_einsum import LiftEinsum
from solar.passes.quantize import Quantize, QuantizeError, QuantizeOptions, check_options, quantize_module
from solar.targets.loader import load_target

N = K = 4096
LINEAR = f"""
solar.module @linear [B = 64] {{
  solar.func @forward(%x: tensor<Bx{K}xbf16>, %w: tensor<{N}x{K}xbf16>) -> tensor<Bx{N}xbf16> {{
    %y = solar.kernel @fc(%x as X, %w as W) -> (Y: tensor<Bx{N}xbf16>) {{
      affine.for %i = 0 to B {{
        affine.for %j = 0 to {N} {{
          affine.for %k = 0 to {K} {{
            Y[%i, %j] += X[%i, %k] * W[%j, %k]
          }}
        }}
      }}
    }}
    solar.return %y
  }}
}}
"""
ACTIVATIONS = 2 * 64 * K * 2  # x read and y written, bf16


def _run(text: str, *passes: object) -> ModuleOp:
    engine = DiagnosticEngine()
    module = parse_module(text, "<test>", engine)
    module = PassManager(list(passes)).run(module, PassContext(engine, report=lambda _: None))  # type: ignore[arg-type]
    assert not engine.has_errors, engine.format_all()
    return module


def _fused_bytes(options: QuantizeOptions) -> tuple[ModuleOp, CostModel]:
    module = _run(LINEAR, LiftEinsum(), Quantize(**options.pass_fields()), Fuse())
    model = CostModel(module)
    return module, model


def test_sub_byte_types_count_bits():
    assert (DType.I4.bits, DType.F4E2M1.bits, DType.F8E8M0.bits, DType.BF16.bits) == (4, 4, 8, 16)
    assert DType.I4.bytes_of(N * K) == 8_388_608  # an int4 4096 x 4096 weight
    assert DType.F4E2M1.itemsize == 0.5 and DType.F16.itemsize == 2


@pytest.mark.parametrize(("options", "expected"), [
    # int4, group 128: codes N·K/2, one f16 scale per 128 inputs
    (QuantizeOptions("int4", 128), N * K // 2 + N * K // 128 * 2),
    # with zero points: one int4 (unsigned) zero per group as well
    (QuantizeOptions("int4", 64, zero_point=True), N * K // 2 + N * K // 64 * 2 + N * K // 64 // 2),
    # int8 per channel: codes N·K, one f16 scale per output channel
    (QuantizeOptions("int8"), N * K + N * 2),
    # fp8 per channel, f32 scales; blocks of 128 along the inputs
    (QuantizeOptions("fp8"), N * K + N * 4),
    (QuantizeOptions("fp8", 128), N * K + N * K // 128 * 4),
    # fp8 in 128 x 128 blocks (DeepSeek-V3's weight_block_size): one f32 per block
    (QuantizeOptions("fp8", 128, block_rows=128), N * K + N * K // 128 // 128 * 4),
    # nvfp4: e2m1 codes, an e4m3 scale per 16 elements, one f32 scale per tensor
    (QuantizeOptions("nvfp4"), N * K // 2 + N * K // 16 + 4),
    # mxfp4: e2m1 codes, an e8m0 scale per 32 elements
    (QuantizeOptions("mxfp4"), N * K // 2 + N * K // 32),
])
def test_weight_bytes_of_each_format(options: QuantizeOptions, expected: int):
    _, model = _fused_bytes(options)
    [group] = model.groups
    # The dequantization joins the contraction's group: DRAM moves the packed weight and its scales.
    assert group.total_bytes == expected + ACTIVATIONS
    assert quantized_bytes(N * K, K, 2, options) == expected
    assert model.whole_graph().total_bytes == expected + ACTIVATIONS
    # The contraction stays at bf16; the dequantization is one multiply per weight, and one more with zero
    # points or a per-tensor scale
    assert set(group.flops_tensor) == {DType.BF16}
    per_weight = 2 if options.weights == "nvfp4" or options.zero_point else 1  # × per-tensor scale; − zero
    assert group.flops_vector[DType.BF16] == per_weight * N * K


def test_fp8_activations_run_at_the_fp8_tensor_peak():
    _, model = _fused_bytes(QuantizeOptions("fp8", activations="fp8"))
    [group] = model.groups
    assert dict(group.flops_tensor) == {DType.F8E4M3: 2 * 64 * N * K}
    # fp8 weights with per-channel scales are read as they are; the scales go to the epilogue.
    assert group.total_bytes == N * K + N * 4 + 4 + ACTIVATIONS
    peaks = Peaks(load_target("h100"))
    assert peaks.choice(DType.F8E4M3, True).flop_per_s == 1979e12
    # int4 weights with fp8 activations: dequantized to fp8 inside the group (W4A8)
    _, w4a8 = _fused_bytes(QuantizeOptions("int4", activations="fp8"))
    assert set(w4a8.groups[0].flops_tensor) == {DType.F8E4M3}


def test_quantized_module_prints_and_parses_back():
    module, _ = _fused_bytes(QuantizeOptions("nvfp4", activations="fp8"))
    text = print_module(module)
    assert "tensor<4096x4096xf4e2m1>" in text and "tensor<4096x256xf8e4m3>" in text
    assert print_module(_run(text)) == text


@given(st.sampled_from(["i4", "u4", "f4e2m1", "f8e8m0", "f8e4m3", "f8e5m2"]), st.integers(1, 64))
def test_new_types_round_trip(spelling: str, n: int):
    text = (f"solar.func @f(%a: tensor<{2 * n}x{spelling}>) -> tensor<{2 * n}x{spelling}> {{\n"
            f"  solar.return %a\n}}\n")
    module = _run(text)
    assert print_module(_run(print_module(module))) == print_module(module)
    assert module.entry.args[0].type.nbytes() == DTYPES[spelling].bits * 2 * n // 8


def test_group_that_does_not_divide_the_reduction_axis():
    module = _run(LINEAR, LiftEinsum())
    with pytest.raises(QuantizeError, match="group size 100 does not divide the reduction axis of weight %w"):
        quantize_module(module, QuantizeOptions("int4", 100))
    with pytest.raises(QuantizeError, match="block rows 96 do not divide the output channels of weight %w"):
        quantize_module(_run(LINEAR, LiftEinsum()), QuantizeOptions("fp8", 128, block_rows=96))


@pytest.mark.parametrize(("options", "message"), [
    (QuantizeOptions("int3"), "unknown weights format 'int3'"),
    (QuantizeOptions(kv_cache="fp4"), "unknown kv_cache format 'fp4'"),
    (QuantizeOptions("nvfp4", 32), "nvfp4 has blocks of 16 elements, not 32"),
    (QuantizeOptions("fp8", zero_point=True), "zero points are for int8 and int4"),
    (QuantizeOptions("fp8", block_rows=-1), "block rows -1 must be positive"),
])
def test_options_no_program_takes(options: QuantizeOptions, message: str):
    with pytest.raises(QuantizeError, match=message):
        check_options(options)


def test_kv_cache_bytes_per_token():
    # Llama-3-8B: 32 layers x 2 x 8 heads x 128 x bf16 = 131,072 B per token
    assert quantized_kv_bytes_per_token(131_072, 128, 2, QuantizeOptions(kv_cache="fp8")) == 65_536
    assert quantized_kv_bytes_per_token(131_072, 128, 2, QuantizeOptions(kv_cache="int8")) == 65_536 + 512 * 2
    assert quantized_kv_bytes_per_token(131_072, 128, 2, QuantizeOptions(kv_cache="int4")) == 32_768 + 512 * 2


@pytest.mark.parametrize(("config", "expected"), [
    ({"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True}, QuantizeOptions("int4", 128)),
    ({"quant_method": "gptq", "bits": 8, "group_size": -1, "sym": False},
     QuantizeOptions("int8", 0, zero_point=True)),
    ({"quant_method": "awq", "bits": 4, "group_size": 64, "zero_point": True},
     QuantizeOptions("int4", 64, zero_point=True)),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True}, QuantizeOptions("int4", 64)),
    ({"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]},
     QuantizeOptions("fp8", 128, activations="fp8", block_rows=128)),
    ({"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "lm_head"]},
     QuantizeOptions("mxfp4", exclude=("lm_head", "model_layers_*_self_attn"))),
    ({"quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
      "config_groups": {"group_0": {"targets": ["Linear"],
                                    "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
                                    "input_activations": {"num_bits": 8, "type": "float", "dynamic": True}}},
      "kv_cache_scheme": {"num_bits": 8, "type": "float"}},
     QuantizeOptions("fp8", 0, "fp8", "fp8")),
    ({"quant_method": "compressed-tensors", "format": "pack-quantized",
      "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "int", "strategy": "group",
                                                "group_size": 128, "symmetric": True}}}},
     QuantizeOptions("int4", 128)),
])
def test_a_checkpoints_quantization_config(config: dict, expected: QuantizeOptions):
    options = config_quantization({"model_type": "llama", "quantization_config": config})
    assert options is not None
    assert options == QuantizeOptions(expected.weights, expected.group_size, expected.kv_cache, expected.activations,
                                      expected.zero_point, expected.exclude or ("lm_head",), expected.block_rows)


def test_a_quantization_config_not_modelled():
    with pytest.raises(LlmError, match="quant_method 'hqq' is not modelled"):
        config_quantization({"quantization_config": {"quant_method": "hqq"}})
    assert config_quantization({"model_type": "llama"}) is None


def test_the_python_api_quantizes():
    import solar
    from solar import BadOptionError, SIRError

    analysis = solar.analyze(LINEAR, quantize="weights=int4,group_size=128")
    assert analysis.totals["h100-sxm"]["fused"].bytes == N * K // 2 + N * K // 128 * 2 + ACTIVATIONS
    with pytest.raises(BadOptionError, match="weights must be one of"):
        solar.analyze(LINEAR, quantize="weights=int3")
    with pytest.raises(SIRError, match="group size 100 does not divide"):
        solar.analyze(LINEAR, quantize=QuantizeOptions("int4", 100))


TWO = """
solar.func @forward(%x: tensor<8x96xbf16>, %w: tensor<64x96xbf16>, %v: tensor<64x100xbf16>) -> tensor<8x100xbf16> {
  %y = solar.kernel @fc(%x as X, %w as W) -> (Y: tensor<8x64xbf16>) {
    affine.for %i = 0 to 8 {
      affine.for %j = 0 to 64 {
        affine.for %k = 0 to 96 {
          Y[%i, %j] += X[%i, %k] * W[%j, %k]
        }
      }
    }
  }
  %z = solar.kernel @fc2(%y as Y, %v as V) -> (Z: tensor<8x100xbf16>) {
    affine.for %i = 0 to 8 {
      affine.for %j = 0 to 100 {
        affine.for %k = 0 to 64 {
          Z[%i, %j] += Y[%i, %k] * V[%k, %j]
        }
      }
    }
  }
  solar.return %z
}
"""


def test_a_refused_group_leaves_the_module_as_it_was():
    # %w's reduction axis (96) takes groups of 32; %v's (axis 0, 64 inputs) does too, but its 100 output
    # channels do not take blocks of 32 rows: refused before %w is rewritten.
    module = _run(TWO, LiftEinsum())
    before = print_module(module)
    with pytest.raises(QuantizeError, match="block rows 32 do not divide the output channels of weight %v"):
        quantize_module(module, QuantizeOptions("fp8", 32, block_rows=32))
    assert print_module(module) == before
    quantize_module(module, QuantizeOptions("int4", 32))
    assert [str(a.type) for a in module.entry.args] == [
        "tensor<8x96xbf16>", "tensor<64x96xi4>", "tensor<64x100xi4>", "tensor<64x3xf16>", "tensor<2x100xf16>"]
