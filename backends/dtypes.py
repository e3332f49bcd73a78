"""How SIR element types are stored and computed when IR runs (see docs/ir.md, "Execution semantics").

Every dtype has three faces here:
- *storage*: the NumPy dtype of arrays that hold it between ops (ml_dtypes for bf16 and the f8 formats;
  tf32 is stored as float32 whose mantissa is rounded to 10 bits);
- *compute*: the NumPy dtype scalar expressions are evaluated in (f32 for every float narrower than f32,
  integers in their own width, i1 as bool);
- *rounding*: a float format narrower than f32 is re-rounded (to nearest, ties to even) at every store, so a
  value in memory is always one the format can hold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from solar.ir.dtypes import DType


@dataclass(frozen=True, slots=True)
class FloatFormat:
    """A binary float format narrower than f32: enough to round an f32 value into it."""

    mantissa_bits: int  # explicit fraction bits
    min_exponent: int  # exponent of the smallest normal number
    max_value: float  # largest finite value
    has_inf: bool  # False: overflow gives NaN (the OCP E4M3 format has no infinities)


FORMATS: dict[DType, FloatFormat] = {
    DType.TF32: FloatFormat(10, -126, float((2 - 2.0 ** -10) * 2.0 ** 127), True),
    DType.BF16: FloatFormat(7, -126, float((2 - 2.0 ** -7) * 2.0 ** 127), True),
    DType.F16: FloatFormat(10, -14, 65504.0, True),
    DType.F8E4M3: FloatFormat(3, -6, 448.0, False),
    DType.F8E5M2: FloatFormat(2, -14, 57344.0, True),
    DType.F4E2M1: FloatFormat(1, 0, 6.0, False),
}

_NARROW = {DType.BF16: "bfloat16", DType.F8E4M3: "float8_e4m3fn", DType.F8E5M2: "float8_e5m2",
           DType.F8E8M0: "float8_e8m0fnu", DType.F4E2M1: "float4_e2m1fn", DType.I4: "int4", DType.U4: "uint4"}
# Sub-byte integers are stored as ml_dtypes' int4/uint4 and computed in a byte.
_NARROW_INT_COMPUTE = {DType.I4: np.dtype(np.int8), DType.U4: np.dtype(np.uint8)}


class _Storage(dict[DType, np.dtype]):
    """bf16 and the f8 formats are stored as ml_dtypes types, imported on first use: importing ml_dtypes
    costs most of a second, which a module without narrow floats should not pay."""

    def __missing__(self, key: Any) -> np.dtype:
        if key not in _NARROW:
            raise KeyError(key)
        import ml_dtypes

        # OCP FP8: E4M3 is the "fn" variant (finite, NaN only), E5M2 is IEEE-like with infinities.
        self.update({dt: np.dtype(getattr(ml_dtypes, name)) for dt, name in _NARROW.items()})
        return self[key]


STORAGE: dict[DType, np.dtype] = _Storage({
    DType.F64: np.dtype(np.float64),
    DType.F32: np.dtype(np.float32),
    DType.TF32: np.dtype(np.float32),
    DType.F16: np.dtype(np.float16),
    DType.I64: np.dtype(np.int64),
    DType.I32: np.dtype(np.int32),
    DType.I16: np.dtype(np.int16),
    DType.I8: np.dtype(np.int8),
    DType.U8: np.dtype(np.uint8),
    DType.I1: np.dtype(np.bool_),
})


def storage_dtype(dtype: DType) -> np.dtype:
    return STORAGE[dtype]


def compute_dtype(dtype: DType) -> np.dtype:
    """The dtype values of `dtype` are computed in (and kernels see arrays of)."""
    if dtype.is_float and dtype != DType.F64:
        return np.dtype(np.float32)
    return _NARROW_INT_COMPUTE.get(dtype) or STORAGE[dtype]


def is_rounded(dtype: DType) -> bool:
    """True for the formats that kernels hold in f32 and round at every store."""
    return dtype in FORMATS


def round_array(values: np.ndarray, dtype: DType) -> np.ndarray:
    """Rounds an f32/f64 array to the values of `dtype`, returned in the compute dtype (f32 for narrow floats)."""
    if dtype == DType.TF32:
        return round_tf32(np.asarray(values, dtype=np.float32))
    if dtype in FORMATS:
        return np.asarray(values, dtype=np.float32).astype(STORAGE[dtype]).astype(np.float32)
    return np.asarray(values).astype(compute_dtype(dtype))


def round_tf32(values: np.ndarray) -> np.ndarray:
    """f32 → tf32 values (10 mantissa bits, nearest-even), kept in float32. ml_dtypes has no tf32."""
    fmt = FORMATS[DType.TF32]
    wide = values.astype(np.float64)
    out = np.empty_like(wide)
    finite = np.isfinite(wide) & (wide != 0)
    _, exp = np.frexp(wide[finite])
    quantum = np.ldexp(1.0, np.maximum(exp - 1, fmt.min_exponent) - fmt.mantissa_bits)
    rounded = np.rint(wide[finite] / quantum) * quantum
    rounded[np.abs(rounded) > fmt.max_value] = np.copysign(np.inf, rounded[np.abs(rounded) > fmt.max_value])
    out[finite] = rounded
    out[~finite] = wide[~finite]
    return out.astype(np.float32)


def to_storage(values: np.ndarray, dtype: DType) -> np.ndarray:
    """Converts compute-typed values (already rounded, or not) to the storage dtype, rounding to nearest even."""
    if dtype == DType.TF32:
        return round_tf32(np.asarray(values, dtype=np.float32))
    target = STORAGE[dtype]
    if dtype in FORMATS and values.dtype != np.float32:
        # ml_dtypes rounds f32 → f8/bf16 exactly once; going through f64 first could round twice.
        values = values.astype(np.float32)
    return _contiguous(values.astype(target, copy=False))


def _contiguous(values: np.ndarray) -> np.ndarray:
    # np.ascontiguousarray would turn a rank-0 array into shape (1,).
    return values if values.flags.c_contiguous else np.ascontiguousarray(values)


def to_compute(values: np.ndarray, dtype: DType) -> np.ndarray:
    """Storage → compute dtype (exact: every narrow float widens to f32 without change)."""
    return _contiguous(values.astype(compute_dtype(dtype), copy=False))


def identity(reduction: str, dtype: DType) -> float | int | bool:
    """The value a buffer reduced with `reduction` starts from (docs/ir.md)."""
    if dtype.is_bool:
        return {"max": False, "min": True, "add": False, "mul": True}[reduction]
    if dtype.is_int:
        info = np.iinfo(STORAGE[dtype]) if dtype not in _NARROW_INT_COMPUTE else \
            np.iinfo(np.int8 if dtype is DType.I4 else np.uint8)
        return {"add": 0, "mul": 1, "max": int(info.min), "min": int(info.max)}[reduction]
    return {"add": 0.0, "mul": 1.0, "max": -math.inf, "min": math.inf}[reduction]


@dataclass(frozen=True, slots=True)
class Tolerance:
    rtol: float
    atol: float


# Comparing an IR run with a reference computed another way (another summation order, f64, PyTorch).
# About 2^-p times a small factor for the format's p mantissa bits; integers and booleans compare exactly.
TOLERANCES: dict[DType, Tolerance] = {
    DType.F64: Tolerance(1e-9, 1e-12),
    DType.F32: Tolerance(2e-4, 1e-5),
    DType.TF32: Tolerance(5e-3, 1e-3),
    DType.BF16: Tolerance(3e-2, 1e-2),
    DType.F16: Tolerance(5e-3, 1e-3),
    DType.F8E4M3: Tolerance(2.5e-1, 5e-2),
    DType.F8E5M2: Tolerance(5e-1, 1e-1),
    DType.F8E8M0: Tolerance(1.0, 1e-1),
    DType.F4E2M1: Tolerance(1.0, 2.5e-1),
    DType.I4: Tolerance(0.0, 0.0),
    DType.U4: Tolerance(0.0, 0.0),
    DType.I64: Tolerance(0.0, 0.0),
    DType.I32: Tolerance(0.0, 0.0),
    DType.I16: Tolerance(0.0, 0.0),
    DType.I8: Tolerance(0.0, 0.0),
    DType.U8: Tolerance(0.0, 0.0),
    DType.I1: Tolerance(0.0, 0.0),
}


def default_tolerance(dtype: DType) -> Tolerance:
    return TOLERANCES[dtype]
