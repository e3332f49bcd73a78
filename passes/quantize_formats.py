"""The formats --quantize stores tensors in, and its options (passes/quantize.py, docs/quantization.md)."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, fields
from typing import Any

from solar.ir.dtypes import DType

WEIGHT_FORMATS = ("none", "int8", "int4", "fp8", "nvfp4", "mxfp4")
CACHE_FORMATS = ("none", "fp8", "int8", "int4")
ACTIVATION_FORMATS = ("none", "fp8", "int8", "nvfp4", "mxfp4")  # int8: W8A8, fp4: W4A4, with the same weights


@dataclass(frozen=True)
class Format:
    """How one format stores a tensor: its codes, the scale of each group (0: one per channel, the whole
    reduction axis), whether it may have zero points, and a per-tensor f32 scale on top (nvfp4)."""

    codes: DType
    scale: DType
    group: int  # the default group along the reduction axis; 0: per channel
    fixed_group: bool = False  # the format defines its block (nvfp4 16, mxfp4 32)
    tensor_scale: bool = False
    unsigned_codes: DType | None = None  # the codes with zero points (asymmetric)


FORMATS: dict[str, Format] = {
    "int8": Format(DType.I8, DType.F16, 0, unsigned_codes=DType.U8),
    # GPTQ, AWQ and compressed-tensors' w4a16: f16 scales per group of 128 input features by default.
    "int4": Format(DType.I4, DType.F16, 128, unsigned_codes=DType.U4),
    # FP8 checkpoints: per-channel f32 scales, or blocks along the input features (group_size).
    "fp8": Format(DType.F8E4M3, DType.F32, 0),
    # NVIDIA's NVFP4: 16-element blocks with e4m3 scales and one f32 scale per tensor.
    "nvfp4": Format(DType.F4E2M1, DType.F8E4M3, 16, fixed_group=True, tensor_scale=True),
    # OCP MX FP4: 32-element blocks with e8m0 (power of two) scales.
    "mxfp4": Format(DType.F4E2M1, DType.F8E8M0, 32, fixed_group=True),
}
# KV caches: fp8 with one f32 scale per tensor (vLLM's k_scale/v_scale); integers with one f16 scale per
# token and head (the last axis is one group).
# Activations that contractions read as codes with one static per-tensor scale (fp4's are block-scaled).
ACTIVATION_CODES = {"fp8": DType.F8E4M3, "int8": DType.I8}
CACHE_CODES = {"fp8": DType.F8E4M3, "int8": DType.I8, "int4": DType.I4}
INT_LARGEST = {DType.I8: 127.0, DType.I4: 7.0}


@dataclass(frozen=True)
class QuantizeOptions:
    """What to quantize, as `--quantize` and solar-llm's flags say it (docs/quantization.md)."""

    weights: str = "none"
    group_size: int = 0  # 0: the format's own (int4 128, nvfp4 16, mxfp4 32; int8 and fp8 per channel)
    kv_cache: str = "none"
    activations: str = "none"
    zero_point: bool = False  # int8/int4 with zero points (asymmetric: GPTQ sym=false, AWQ)
    exclude: tuple[str, ...] = ()  # weights whose argument name contains one of these stay as they are
    block_rows: int = 0  # > 1: one scale per block_rows × group_size block (fp8's 128 × 128), not per row

    def pass_fields(self) -> dict[str, Any]:
        """The fields of the --quantize pass that these options are."""
        return {"weights": self.weights, "group_size": self.group_size, "kv_cache": self.kv_cache,
                "activations": self.activations, "zero_point": self.zero_point, "exclude": ",".join(self.exclude),
                "block_rows": self.block_rows}

    @property
    def active(self) -> bool:
        return (self.weights, self.kv_cache, self.activations) != ("none", "none", "none")

    def describe(self) -> str:
        """The options as --quantize takes them (only those that differ from the defaults)."""
        parts = []
        for f in fields(self):
            value = getattr(self, f.name)
            if value != f.default:
                shown = ",".join(value) if isinstance(value, tuple) else str(value).lower()
                parts.append(f"{f.name}={shown}")
        return ",".join(parts) or "weights=none"


class QuantizeError(ValueError):
    """An option that does not fit the program: a group size that does not divide a reduction axis."""


def check_options(options: QuantizeOptions) -> None:
    """Options that no program could take: an unknown format, a group size for a format that fixes its own."""
    for what, value, allowed in (("weights", options.weights, WEIGHT_FORMATS),
                                 ("kv_cache", options.kv_cache, CACHE_FORMATS),
                                 ("activations", options.activations, ACTIVATION_FORMATS)):
        if value not in allowed:
            raise QuantizeError(f"unknown {what} format '{value}': expected one of {', '.join(allowed)}")
    if options.block_rows < 0:
        raise QuantizeError(f"block rows {options.block_rows} must be positive (0: a scale per row)")
    if options.group_size < 0:
        raise QuantizeError(f"group size {options.group_size} must be positive (0: the format's own)")
    fmt = FORMATS.get(options.weights)
    if fmt is not None and fmt.fixed_group and options.group_size not in (0, fmt.group):
        raise QuantizeError(f"{options.weights} has blocks of {fmt.group} elements, not {options.group_size}")
    if options.activations in ("nvfp4", "mxfp4") and options.weights != options.activations:
        raise QuantizeError(f"{options.activations} activations need {options.activations} weights (W4A4: a "
                            f"block-scaled contraction reads both operands in one format), not {options.weights}")
    if options.activations == "int8" and options.weights != "int8":
        raise QuantizeError(f"int8 activations need int8 weights (W8A8: an int8 contraction reads both operands' "
                            f"codes), not {options.weights}")
    if options.zero_point and options.weights not in ("int8", "int4"):
        raise QuantizeError(f"zero points are for int8 and int4 weights, not {options.weights}")


def excluded(name: str, patterns: tuple[str, ...]) -> bool:
    """Whether an argument named `name` is one of `exclude`'s: a part of its name (`lm_head`), `*` any text."""
    return any(p and fnmatch.fnmatchcase(name, f"*{p}*") for p in patterns)
