"""The peak policy: which figure prices work of a precision on a unit of execution, with its fallbacks (a
contraction in bf16 on tensor cores, else bf16 vector, else FP32 vector; docs/sol.md), and the spellings of
precisions, units and IR dtypes it accepts."""

from __future__ import annotations

from .vocabulary import PRECISIONS, TargetError

# Precision and unit spellings accepted by Target.peak / select_peak.
_PRECISION_ALIASES: dict[str, str] = {
    "f64": "fp64", "float64": "fp64", "double": "fp64",
    "f32": "fp32", "float32": "fp32", "float": "fp32",
    "tf32": "tf32",
    "bf16": "bf16", "bfloat16": "bf16",
    "f16": "fp16", "float16": "fp16", "half": "fp16",
    "f8": "fp8", "f8e4m3": "fp8", "f8e8m0": "fp8", "f8e5m2": "fp8", "e4m3": "fp8", "e5m2": "fp8", "float8": "fp8",
    "f4": "fp4", "nvfp4": "fp4", "mxfp4": "fp4", "f4e2m1": "fp4",
    "i8": "int8", "int8": "int8", "u8": "int8", "uint8": "int8",
    "i4": "int4", "u4": "int4", "int4": "int4",
    **{p: p for p in PRECISIONS},
}
_WIDE_INTS = frozenset({"i1", "i16", "i32", "i64", "int16", "int32", "int64", "bool"})
_UNIT_ALIASES = {"vector": "vector", "vec": "vector", "simd": "vector", "sm": "vector", "cuda": "vector",
                 "tensor": "tensor", "tc": "tensor", "matrix": "tensor", "mxu": "tensor"}


def norm_precision(precision: str) -> str:
    p = _PRECISION_ALIASES.get(precision.strip().lower())
    if p is None:
        raise TargetError(f"unknown precision {precision!r} (expected one of {', '.join(PRECISIONS)})")
    return p


def norm_unit(unit: str) -> str:
    u = _UNIT_ALIASES.get(unit.strip().lower())
    if u is None:
        raise TargetError(f"unknown unit of execution {unit!r} (expected 'vector' or 'tensor')")
    return u


def dtype_precision(dtype: str) -> str:
    d = dtype.strip().lower()
    if d in _WIDE_INTS:
        return "wideint"
    if d in _PRECISION_ALIASES:
        return _PRECISION_ALIASES[d]
    raise TargetError(f"unknown dtype {dtype!r} (expected an IR dtype such as f32, bf16, f8e4m3, i8)")


# Contractions a target without the precision's own tensor figure can still run exactly on several units:
# the bound takes the fastest of them (the least time any of them allows), not the first. e2m1 codes (fp4)
# are exact in e4m3, in bf16, and doubled in int8 (±0.5 … ±6 → ±1 … ±12; a block's products sum exactly in
# int32 before its scales apply); int4 cannot hold them (12 > 7: two digits a side, four passes, so never
# faster than int8), nor fp16 beyond bf16's rate on any device we know of.
FASTEST_WIDENED: dict[str, tuple[str, ...]] = {"fp4": ("fp8_tensor", "int8_tensor", "bf16_tensor")}


def peak_chain(prec: str, *, contraction: bool, allow_tf32: bool, bf16_passes: bool = False) -> list[tuple[str, bool]]:
    """Candidate figures in order, each with whether it is optional (may be absent from the file).

    `bf16_passes`: the device runs f32 contractions on its bf16 matrix units in one or more passes (XLA on a
    TPU: one pass at DEFAULT precision, three or six at HIGH and HIGHEST), so the bf16 tensor rate bounds
    them at every precision setting."""
    fp32_vec = ("fp32_vector", False)
    if not contraction:
        if prec == "fp64":
            return [("fp64_vector", False)]
        if prec in ("fp32", "tf32", "wideint"):
            return [fp32_vec]
        # 16/8/4-bit vector work: its own vector figure when given, else FP32 vector (documented choice);
        # 4-bit integers may also take the int8 vector figure.
        return [(f"{prec}_vector", True), *([("int8_vector", True)] if prec == "int4" else []), fp32_vec]
    match prec:
        case "fp64":
            return [("fp64_tensor", False), ("fp64_vector", False)]
        case "fp32":
            chain = [("fp32_tensor", True)]
            if bf16_passes:
                return [*chain, ("bf16_tensor", False)]
            if allow_tf32:
                chain.append(("tf32_tensor", False))
            return [*chain, fp32_vec]
        case "tf32":
            return [("tf32_tensor", False), fp32_vec]
        case "bf16" | "fp16":
            return [(f"{prec}_tensor", False), (f"{prec}_vector", True), fp32_vec]
        case "fp8":
            return [("fp8_tensor", False), ("bf16_tensor", False), fp32_vec]
        case "fp4":  # without fp4 tensor cores: the fastest of FASTEST_WIDENED["fp4"] (Target.select_peak)
            return [("fp4_tensor", False), ("fp8_tensor", False), ("bf16_tensor", False), fp32_vec]
        case "int8":
            return [("int8_tensor", False), ("int8_vector", True), fp32_vec]
        case "int4":  # Ampere and Ada have int4 tensor cores (twice int8); elsewhere the operands widen to int8
            return [("int4_tensor", True), ("int8_tensor", False), ("int8_vector", True), fp32_vec]
        case _:  # wider integers: no tensor path
            return [fp32_vec]
