"""Scalar helpers called from generated kernels (compiled with them by Numba, inlined by LLVM).

Each helper exists in an f32 and an f64 flavour where constants are involved: a bare Python float literal
would promote an f32 computation to f64 inside Numba, and SIR says f32 values are computed in f32.
The generated code names these helpers explicitly (`from solar.backends.runtime import ...`); a change to this
file changes every generated module's header hash, so stale disk caches are never reused.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

_JIT = {"cache": True, "error_model": "numpy"}

# Largest finite values of the formats whose exponent range is f32's (Numba freezes these globals).
BF16_MAX = (2.0 - 2.0 ** -7) * 2.0 ** 127
TF32_MAX = (2.0 - 2.0 ** -10) * 2.0 ** 127


# ---- NaN-propagating max / min (docs/ir.md: "larger, smaller (NaN propagates)") ------------------------


@njit(**_JIT)
def fmax(a, b):  # type: ignore[no-untyped-def]
    # `a >= b` is False when either is NaN; then return whichever is NaN.
    if a >= b or a != a:
        return a
    return b


@njit(**_JIT)
def fmin(a, b):  # type: ignore[no-untyped-def]
    if a <= b or a != a:
        return a
    return b


# ---- transcendental helpers with typed constants ----------------------------------------------------


@njit(**_JIT)
def sigmoid_f32(x):  # type: ignore[no-untyped-def]
    return np.float32(1.0) / (np.float32(1.0) + np.exp(-x))


@njit(**_JIT)
def sigmoid_f64(x):  # type: ignore[no-untyped-def]
    return 1.0 / (1.0 + np.exp(-x))


@njit(**_JIT)
def rsqrt_f32(x):  # type: ignore[no-untyped-def]
    return np.float32(1.0) / np.sqrt(x)


@njit(**_JIT)
def rsqrt_f64(x):  # type: ignore[no-untyped-def]
    return 1.0 / np.sqrt(x)


@njit(**_JIT)
def recip_f32(x):  # type: ignore[no-untyped-def]
    return np.float32(1.0) / x


@njit(**_JIT)
def recip_f64(x):  # type: ignore[no-untyped-def]
    return 1.0 / x


@njit(**_JIT)
def erf_f32(x):  # type: ignore[no-untyped-def]
    return np.float32(math.erf(x))


@njit(**_JIT)
def erf_f64(x):  # type: ignore[no-untyped-def]
    return math.erf(x)


@njit(**_JIT)
def exp2_f32(x):  # type: ignore[no-untyped-def]
    return np.float32(np.exp2(x))


@njit(**_JIT)
def exp2_f64(x):  # type: ignore[no-untyped-def]
    return np.exp2(x)


@njit(**_JIT)
def pow_f32(a, b):  # type: ignore[no-untyped-def]
    return np.float32(np.power(a, b))


@njit(**_JIT)
def pow_f64(a, b):  # type: ignore[no-untyped-def]
    return np.power(a, b)


@njit(**_JIT)
def erf_array(x):  # type: ignore[no-untyped-def]
    """erf over a 1-d array (NumPy has no erf ufunc; SciPy is not a dependency)."""
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = math.erf(x[i])
    return out


# ---- float → integer casts: truncate toward zero, NaN → 0, saturate at the type's range ----------------


@njit(**_JIT)
def f2i(x, lo, hi):  # type: ignore[no-untyped-def]
    if x != x:
        return 0
    if x <= lo:
        return lo
    if x >= hi:
        return hi
    return int(x)


# ---- rounding to narrow float formats (round to nearest, ties to even) --------------------------------


@njit(**_JIT)
def round_format(x, mantissa_bits, min_exponent, max_value, has_inf):  # type: ignore[no-untyped-def]
    """Rounds an f32 value to the nearest value of a float format; the result is exact in f32.

    Scaling by a power of two is exact in f64, so `rint(x / quantum) * quantum` rounds once, to nearest even,
    with subnormals handled by clamping the exponent at the format's smallest normal exponent."""
    v = np.float64(x)
    if v != v:
        return np.float32(v)
    if v == 0.0:
        return np.float32(v)
    if math.isinf(v):
        if has_inf:
            return np.float32(v)
        return np.float32(np.nan)
    _, e = math.frexp(v)  # v = m * 2**e with 0.5 <= |m| < 1: the leading bit has weight 2**(e-1)
    exponent = max(e - 1, min_exponent)
    quantum = math.ldexp(1.0, exponent - mantissa_bits)
    r = np.rint(v / quantum) * quantum
    if abs(r) > max_value:
        if has_inf:
            return np.float32(math.copysign(math.inf, r))
        return np.float32(np.nan)
    return np.float32(r)


@njit(**_JIT)
def rnd_bf16(x):  # type: ignore[no-untyped-def]
    return round_format(x, 7, -126, BF16_MAX, True)


@njit(**_JIT)
def rnd_f16(x):  # type: ignore[no-untyped-def]
    return round_format(x, 10, -14, 65504.0, True)


@njit(**_JIT)
def rnd_tf32(x):  # type: ignore[no-untyped-def]
    return round_format(x, 10, -126, TF32_MAX, True)


@njit(**_JIT)
def rnd_f8e4m3(x):  # type: ignore[no-untyped-def]
    return round_format(x, 3, -6, 448.0, False)


@njit(**_JIT)
def rnd_f4e2m1(x):  # type: ignore[no-untyped-def]
    return round_format(x, 1, 0, 6.0, False)


@njit(**_JIT)
def rnd_f8e5m2(x):  # type: ignore[no-untyped-def]
    return round_format(x, 2, -14, 57344.0, True)


__all__ = [
    "erf_array", "erf_f32", "erf_f64", "exp2_f32", "exp2_f64", "f2i", "fmax", "fmin", "pow_f32", "pow_f64", "recip_f32",
    "recip_f64", "rnd_bf16", "rnd_f4e2m1", "rnd_f8e4m3", "rnd_f8e5m2", "rnd_f16", "rnd_tf32", "round_format",
    "rsqrt_f32", "rsqrt_f64", "sigmoid_f32", "sigmoid_f64",
]
