"""The executor, construct by construct: kernels (loops, guards, reductions, prange), einsums (BLAS and loop
paths), composition ops, size parameters and the errors a user can cause. Small shapes: every kernel here
compiles once and then comes from Numba's disk cache."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from solar.backends.codegen import generate_kernel
from solar.backends.einsum import blas_plan
from solar.backends.errors import EntryError, InputError, ParamError, RuntimeBoundsError, VerificationError
from solar.backends.executor import prepare, run
from solar.ir import parse_and_verify
from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.ops import EinsumOp, KernelOp
from solar.ir.parser import parse_module


def sir_run(text: str, inputs: Any, params: dict[str, int] | None = None, entry: str | None = None) -> list[np.ndarray]:
    engine = DiagnosticEngine()
    module = parse_module(text, "test.sir", engine)
    assert not engine.has_errors, engine.format_all()
    return run(module, inputs, params, entry)


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def first_kernel(text: str) -> KernelOp:
    module = parse_and_verify(text)
    return next(op for op in module.walk() if isinstance(op, KernelOp))


# ---- kernels ---------------------------------------------------------------------------------------------

MATMUL = """
solar.func @mm(%a: tensor<5x7xf32>, %b: tensor<7x3xf32>) -> tensor<5x3xf32> {
  %c = solar.kernel @mm(%a as A, %b as B) -> (C: tensor<5x3xf32>) {
    affine.for %i = 0 to 5 {
      affine.for %j = 0 to 3 {
        affine.for %k = 0 to 7 {
          C[%i, %j] += A[%i, %k] * B[%k, %j]
        }
      }
    }
  }
  solar.return %c
}
"""


def test_matmul_kernel() -> None:
    a, b = rand(5, 7), rand(7, 3, seed=1)
    (c,) = sir_run(MATMUL, {"a": a, "b": b})
    assert c.dtype == np.float32 and c.shape == (5, 3)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-6)


def test_small_nests_stay_serial() -> None:
    gen = generate_kernel(first_kernel(MATMUL))
    assert not gen.parallel and "prange" not in gen.source


def test_matmul_kernel_is_parallel_and_runs_in_ikj_order() -> None:
    gen = generate_kernel(first_kernel(MATMUL), min_parallel_points=0)
    assert gen.parallel and gen.prange_loops == 1
    assert "prange(0, 5)" in gen.source
    # j moves innermost: C[i, j] and B[k, j] walk their contiguous dimension, A[i, k] stays in a register.
    loops = [line.strip() for line in gen.source.splitlines() if line.strip().startswith("for ")]
    assert loops == ["for i0 in prange(0, 5):", "for i1 in range(0, 7):", "for i2 in range(0, 3):"]
    assert "t2[i0, i2] += (t0[i0, i1] * t1[i1, i2])" in gen.source


LINEAR = """
solar.func @fc(%x: tensor<4x6xf32>, %w: tensor<5x6xf32>) -> tensor<4x5xf32> {
  %y = solar.kernel @fc(%x as X, %w as W) -> (Y: tensor<4x5xf32>) {
    affine.for %i = 0 to 4 {
      affine.for %j = 0 to 5 {
        affine.for %k = 0 to 6 {
          Y[%i, %j] += X[%i, %k] * W[%j, %k]
        }
      }
    }
  }
  solar.return %y
}
"""


def test_linear_kernel_keeps_its_order_and_the_sum_in_a_scalar() -> None:
    gen = generate_kernel(first_kernel(LINEAR))
    assert gen.hoisted == 1 and "a0 += (t0[i0, i2] * t1[i1, i2])" in gen.source
    x, w = rand(4, 6), rand(5, 6, seed=3)
    (y,) = sir_run(LINEAR, {"x": x, "w": w})
    np.testing.assert_allclose(y, x @ w.T, rtol=1e-5, atol=1e-6)


def test_inputs_by_position() -> None:
    a, b = rand(5, 7), rand(7, 3, seed=1)
    (c,) = sir_run(MATMUL, [a, b])
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-6)


RECURRENCE = """
solar.func @scan(%x: tensor<16xf32>) -> tensor<16xf32> {
  %y = solar.kernel @scan(%x as X) -> (Y: tensor<16xf32>) {
    affine.for %i = 0 to 16 {
      Y[%i] = X[%i]
      affine.if %i >= 1 {
        Y[%i] = Y[%i - 1] + X[%i]
      }
    }
  }
  solar.return %y
}
"""


def test_loop_carried_dependence_stays_sequential() -> None:
    gen = generate_kernel(first_kernel(RECURRENCE), min_parallel_points=0)
    assert not gen.parallel, "Y[%i - 1] is read where Y[%i] is written: iterations depend on each other"
    x = rand(16)
    (y,) = sir_run(RECURRENCE, {"x": x})
    np.testing.assert_allclose(y, np.cumsum(x), rtol=1e-5, atol=1e-5)


SCRATCH = """
solar.func @rows(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = solar.kernel @rows(%x as X) -> (Y: tensor<4x8xf32>) {
    local tmp: tensor<8xf32>
    affine.for %i = 0 to 4 {
      affine.for %j = 0 to 8 {
        tmp[%j] = X[%i, %j] * 2.0
      }
      affine.for %j = 0 to 8 {
        Y[%i, %j] = tmp[7 - %j]
      }
    }
  }
  solar.return %y
}
"""


def test_shared_scratch_local_is_not_parallelised() -> None:
    gen = generate_kernel(first_kernel(SCRATCH), min_parallel_points=0)
    assert not gen.parallel, "every iteration of %i reuses tmp: running them at once would race"
    x = rand(4, 8)
    (y,) = sir_run(SCRATCH, {"x": x})
    np.testing.assert_allclose(y, (x * 2)[:, ::-1])


def test_softmax_reductions_start_from_identities() -> None:
    text = """
solar.func @sm(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %y = solar.kernel @sm(%x as X) -> (Y: tensor<3x5xf32>) {
    local mx: tensor<3xf32>
    local sum: tensor<3xf32>
    affine.for %i = 0 to 3 {
      affine.for %j = 0 to 5 {
        mx[%i] max= X[%i, %j]
      }
      affine.for %j = 0 to 5 {
        sum[%i] += exp(X[%i, %j] - mx[%i])
      }
      affine.for %j = 0 to 5 {
        Y[%i, %j] = exp(X[%i, %j] - mx[%i]) / sum[%i]
      }
    }
  }
  solar.return %y
}
"""
    x = rand(3, 5) - 10.0  # all negative: a max starting from 0 instead of -inf would be wrong
    (y,) = sir_run(text, {"x": x})
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-5)


def test_all_reduction_kinds_and_identities() -> None:
    text = """
solar.func @red(%x: tensor<4x6xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %s, %p, %mx, %mn, %e = solar.kernel @red(%x as X)
      -> (S: tensor<4xf32>, P: tensor<4xf32>, MX: tensor<4xf32>, MN: tensor<4xf32>, E: tensor<4xf32>) {
    affine.for %i = 0 to 4 {
      affine.for %j = 0 to 6 {
        S[%i] += X[%i, %j]
        P[%i] *= X[%i, %j]
        MX[%i] max= X[%i, %j]
        MN[%i] min= X[%i, %j]
      }
      affine.for %j = 0 to 0 {
        E[%i] max= X[%i, %j]
      }
    }
  }
  solar.return %s, %p, %mx, %mn, %e
}
"""
    x = rand(4, 6)
    s, p, mx, mn, e = sir_run(text, {"x": x})
    np.testing.assert_allclose(s, x.sum(1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(p, x.prod(1), rtol=1e-5)
    np.testing.assert_array_equal(mx, x.max(1))
    np.testing.assert_array_equal(mn, x.min(1))
    assert np.all(e == -np.inf), "an empty max-reduction leaves the identity"


def test_max_propagates_nan() -> None:
    text = """
solar.func @m(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) {
  %r, %y = solar.kernel @m(%x as X) -> (R: tensor<f32>, Y: tensor<4xf32>) {
    affine.for %i = 0 to 4 {
      R[] max= X[%i]
      Y[%i] = min(X[%i], 0.0)
    }
  }
  solar.return %r, %y
}
"""
    x = np.array([1.0, np.nan, 3.0, -2.0], dtype=np.float32)
    r, y = sir_run(text, {"x": x})
    assert r.shape == () and np.isnan(r)
    assert np.isnan(y[1]) and y[0] == 0.0 and y[3] == -2.0


def test_triangular_loops_bounds_with_max_min_and_step() -> None:
    text = """
solar.func @tri(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %y = solar.kernel @tri(%x as X) -> (Y: tensor<8x8xf32>) {
    affine.for %i = 0 to 8 {
      affine.for %j = max(0, %i - 2) to min(8, %i + 1) {
        Y[%i, %j] = X[%i, %j]
      }
    }
    affine.for %i = 0 to 8 step 3 {
      Y[%i, 7] = -1.0
    }
  }
  solar.return %y
}
"""
    x = rand(8, 8)
    (y,) = sir_run(text, {"x": x})
    want = np.zeros_like(x)
    for i in range(8):
        for j in range(max(0, i - 2), min(8, i + 1)):
            want[i, j] = x[i, j]
    want[0:8:3, 7] = -1.0
    np.testing.assert_array_equal(y, want)


def test_padding_guard_conv1d() -> None:
    text = """
solar.func @conv(%x: tensor<10xf32>, %w: tensor<3xf32>) -> tensor<10xf32> {
  %y = solar.kernel @conv(%x as X, %w as W) -> (Y: tensor<10xf32>) {
    affine.for %p = 0 to 10 {
      affine.for %r = 0 to 3 {
        affine.if %p + %r - 1 >= 0 and %p + %r - 1 < 10 {
          Y[%p] += X[%p + %r - 1] * W[%r]
        }
      }
    }
  }
  solar.return %y
}
"""
    x, w = rand(10), rand(3, seed=2)
    gen = generate_kernel(first_kernel(text))
    assert not gen.checks, "the guard proves X's index in range: no run-time check needed"
    (y,) = sir_run(text, {"x": x, "w": w})
    np.testing.assert_allclose(y, np.convolve(np.pad(x, 1), w[::-1], mode="valid"), rtol=1e-5, atol=1e-6)


def test_index_arithmetic_floordiv_ceildiv_mod() -> None:
    text = """
solar.func @ix(%x: tensor<12xi64>) -> (tensor<12xi64>, tensor<12xi64>, tensor<12xi64>, tensor<3x4xi64>) {
  %a, %b, %c, %d = solar.kernel @ix(%x as X)
      -> (A: tensor<12xi64>, B: tensor<12xi64>, C: tensor<12xi64>, D: tensor<3x4xi64>) {
    affine.for %i = 0 to 12 {
      A[%i] = (X[%i] - 6) floordiv 4
      B[%i] = (X[%i] - 6) ceildiv 4
      C[%i] = (X[%i] - 6) mod 4
      D[%i floordiv 4, %i mod 4] = %i
    }
  }
  solar.return %a, %b, %c, %d
}
"""
    x = np.arange(12, dtype=np.int64)
    a, b, c, d = sir_run(text, {"x": x})
    np.testing.assert_array_equal(a, (x - 6) // 4)
    np.testing.assert_array_equal(b, -((-(x - 6)) // 4))
    np.testing.assert_array_equal(c, (x - 6) % 4)
    np.testing.assert_array_equal(d, np.arange(12).reshape(3, 4))


def test_scalar_functions() -> None:
    funcs = ["exp", "exp2", "expm1", "log", "log2", "log1p", "sin", "cos", "tanh", "sigmoid", "erf", "sqrt",
             "rsqrt", "reciprocal", "abs", "neg", "sign", "floor", "ceil", "round"]
    outs = ", ".join(f"O{k}: tensor<6xf32>" for k in range(len(funcs)))
    stmts = "\n".join(f"      O{k}[%i] = {f}(X[%i])" for k, f in enumerate(funcs))
    names = ", ".join(f"%o{k}" for k in range(len(funcs)))
    types = ", ".join("tensor<6xf32>" for _ in funcs)
    text = f"""
solar.func @f(%x: tensor<6xf32>) -> ({types}) {{
  {names} = solar.kernel @f(%x as X) -> ({outs}) {{
    affine.for %i = 0 to 6 {{
{stmts}
    }}
  }}
  solar.return {names}
}}
"""
    import math

    x = np.array([0.25, 0.5, 1.5, 2.5, 3.0, 0.75], dtype=np.float32)
    results = sir_run(text, {"x": x})
    x64 = x.astype(np.float64)
    refs = {
        "exp": np.exp(x64), "exp2": np.exp2(x64), "expm1": np.expm1(x64), "log": np.log(x64),
        "log2": np.log2(x64), "log1p": np.log1p(x64), "sin": np.sin(x64), "cos": np.cos(x64),
        "tanh": np.tanh(x64), "sigmoid": 1 / (1 + np.exp(-x64)), "erf": np.array([math.erf(v) for v in x64]),
        "sqrt": np.sqrt(x64), "rsqrt": 1 / np.sqrt(x64), "reciprocal": 1 / x64, "abs": np.abs(x64),
        "neg": -x64, "sign": np.sign(x64), "floor": np.floor(x64), "ceil": np.ceil(x64),
        "round": np.rint(x64),  # ties to even: 0.5 → 0, 1.5 → 2, 2.5 → 2
    }
    for f, got in zip(funcs, results, strict=True):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, refs[f], rtol=2e-6, atol=1e-7, err_msg=f)


def test_pow_select_isnan_comparisons_and_logic() -> None:
    text = """
solar.func @f(%x: tensor<5xf32>, %y: tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>, tensor<5xi1>, tensor<5xi1>) {
  %p, %s, %n, %l = solar.kernel @f(%x as X, %y as Y)
      -> (P: tensor<5xf32>, S: tensor<5xf32>, N: tensor<5xi1>, L: tensor<5xi1>) {
    affine.for %i = 0 to 5 {
      P[%i] = pow(abs(X[%i]), Y[%i])
      S[%i] = select(X[%i] > Y[%i], X[%i], Y[%i] * 2.0)
      N[%i] = isnan(X[%i])
      L[%i] = not (X[%i] < 0.0 or Y[%i] >= 1.0) and %i != 2
    }
  }
  solar.return %p, %s, %n, %l
}
"""
    x = np.array([1.5, -2.0, np.nan, 0.5, 3.0], dtype=np.float32)
    y = np.array([2.0, 0.5, 1.0, 0.25, -1.0], dtype=np.float32)
    p, s, n, ll = sir_run(text, {"x": x, "y": y})
    np.testing.assert_allclose(p, np.abs(x) ** y, rtol=1e-6)
    np.testing.assert_array_equal(s, np.where(x > y, x, y * 2))
    np.testing.assert_array_equal(n, np.isnan(x))
    np.testing.assert_array_equal(ll, ~((x < 0) | (y >= 1)) & (np.arange(5) != 2))
    assert n.dtype == np.bool_


def test_integer_kernels_wrap_and_integer_reductions() -> None:
    text = """
solar.func @f(%x: tensor<4xi32>, %b: tensor<4xi8>)
    -> (tensor<4xi32>, tensor<i32>, tensor<i32>, tensor<4xi8>, tensor<i1>) {
  %y, %mx, %mn, %c, %any = solar.kernel @f(%x as X, %b as B)
      -> (Y: tensor<4xi32>, MX: tensor<i32>, MN: tensor<i32>, C: tensor<4xi8>, ANY: tensor<i1>) {
    affine.for %i = 0 to 4 {
      Y[%i] = X[%i] * 2 + 1
      MX[] max= X[%i]
      MN[] min= X[%i]
      C[%i] = B[%i] * 2
      ANY[] max= X[%i] > 100
    }
  }
  solar.return %y, %mx, %mn, %c, %any
}
"""
    x = np.array([3, -7, 2_000_000_000, 5], dtype=np.int32)
    b = np.array([100, -100, 3, 64], dtype=np.int8)
    y, mx, mn, c, anyv = sir_run(text, {"x": x, "b": b})
    assert y.dtype == np.int32 and c.dtype == np.int8 and anyv.dtype == np.bool_
    np.testing.assert_array_equal(y, (x.astype(np.int64) * 2 + 1).astype(np.int32))  # wraps like i32
    assert mx == x.max() and mn == x.min() and bool(anyv)
    np.testing.assert_array_equal(c, (b.astype(np.int64) * 2).astype(np.int8))


def test_casts() -> None:
    text = """
solar.func @f(%x: tensor<6xf32>, %i: tensor<6xi64>)
    -> (tensor<6xi32>, tensor<6xf32>, tensor<6xi1>, tensor<6xf64>, tensor<6xi8>) {
  %a, %b, %c, %d, %e = solar.kernel @f(%x as X, %i as I)
      -> (A: tensor<6xi32>, B: tensor<6xf32>, C: tensor<6xi1>, D: tensor<6xf64>, E: tensor<6xi8>) {
    affine.for %k = 0 to 6 {
      A[%k] = cast<i32>(X[%k])
      B[%k] = cast<f32>(I[%k]) + cast<f32>(%k)
      C[%k] = cast<i1>(X[%k])
      D[%k] = cast<f64>(X[%k]) * 2.0
      E[%k] = cast<i8>(I[%k])
    }
  }
  solar.return %a, %b, %c, %d, %e
}
"""
    x = np.array([1.7, -1.7, 0.0, np.nan, 1e20, -3.5], dtype=np.float32)
    i = np.array([1, 2, 300, -129, 0, 7], dtype=np.int64)
    a, b, c, d, e = sir_run(text, {"x": x, "i": i})
    # float → int truncates toward zero, NaN → 0, out of range saturates
    np.testing.assert_array_equal(a, [1, -1, 0, 0, np.iinfo(np.int32).max, -3])
    np.testing.assert_array_equal(b, i.astype(np.float32) + np.arange(6, dtype=np.float32))
    np.testing.assert_array_equal(c, [True, True, False, True, True, True])
    assert d.dtype == np.float64
    np.testing.assert_array_equal(d, x.astype(np.float64) * 2)
    np.testing.assert_array_equal(e, i.astype(np.int8))  # int → narrower int wraps


def test_solar_for_index_reaches_kernels() -> None:
    text = """
solar.module @m [T = 5] {
  solar.func @f(%x: tensor<Tx3xf32>) -> tensor<Tx3xf32> {
    %z = solar.constant 0.0 : tensor<Tx3xf32>
    %r = solar.for %t = 0 to T iter_args(%acc = %z) -> tensor<Tx3xf32> {
      %n = solar.kernel @row(%x as X, %acc as A) -> (N: tensor<Tx3xf32>) {
        affine.for %i = 0 to T {
          affine.for %j = 0 to 3 {
            N[%i, %j] = A[%i, %j]
          }
        }
        affine.for %j = 0 to 3 {
          N[%t, %j] = X[%t, %j] * cast<f32>(%t)
        }
      }
      solar.yield %n
    }
    solar.return %r
  }
}
"""
    x = rand(5, 3)
    (y,) = sir_run(text, {"x": x})
    np.testing.assert_allclose(y, x * np.arange(5, dtype=np.float32)[:, None])
    (y3,) = sir_run(text, {"x": x[:3]}, params={"T": 3})
    np.testing.assert_allclose(y3, x[:3] * np.arange(3, dtype=np.float32)[:, None])


def test_rank0_tensors() -> None:
    text = """
solar.func @f(%s: tensor<f32>, %x: tensor<3xf32>) -> tensor<f32> {
  %r = solar.kernel @f(%s as S, %x as X) -> (R: tensor<f32>) {
    R[] = S[]
    affine.for %i = 0 to 3 {
      R[] += X[%i]
    }
  }
  solar.return %r
}
"""
    (r,) = sir_run(text, {"s": np.array(1.5, dtype=np.float32), "x": np.ones(3, np.float32)})
    assert r.shape == () and float(r) == 4.5


def test_out_of_bounds_kernel_access_is_reported_not_crashed() -> None:
    text = """
solar.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = solar.kernel @shift(%x as X) -> (Y: tensor<8xf32>) {
    affine.for %i = 0 to 8 {
      Y[%i] = X[%i + 1]
    }
  }
  solar.return %y
}
"""
    with pytest.raises(RuntimeBoundsError, match=r"kernel @shift at test.sir:5:\d+: index 0 of X\[%i \+ 1\] is 8, "
                                                 r"outside \[0, 8\)"):
        sir_run(text, {"x": rand(8)})


def test_unprovable_access_is_checked_and_valid_one_passes() -> None:
    text = """
solar.func @f(%x: tensor<8xf32>) -> tensor<4xf32> {
  %y = solar.kernel @rev(%x as X) -> (Y: tensor<4xf32>) {
    affine.for %i = 0 to 4 {
      Y[%i] = X[(%i * 7) mod 8]
    }
  }
  solar.return %y
}
"""
    x = rand(8)
    (y,) = sir_run(text, {"x": x})
    np.testing.assert_array_equal(y, x[(np.arange(4) * 7) % 8])


# ---- einsums ----------------------------------------------------------------------------------------------


def einsum_op(text: str) -> EinsumOp:
    module = parse_and_verify(text)
    return next(op for op in module.walk() if isinstance(op, EinsumOp))


BMM = """
solar.func @f(%a: tensor<3x4x5xf32>, %b: tensor<3x5x6xf32>) -> tensor<3x4x6xf32> {
  %c = solar.einsum @bmm "bik,bkj->bij" (%a as A, %b as B) -> (C: tensor<3x4x6xf32>) {
    C += A * B
    C = max(C, 0.0)
  }
  solar.return %c
}
"""


def test_einsum_batched_matmul_with_epilogue_uses_blas() -> None:
    assert blas_plan(einsum_op(BMM)) is not None
    a, b = rand(3, 4, 5), rand(3, 5, 6, seed=1)
    (c,) = sir_run(BMM, {"a": a, "b": b})
    np.testing.assert_allclose(c, np.maximum(a @ b, 0), rtol=1e-5, atol=1e-6)


CONV = """
solar.func @f(%x: tensor<2x3x9x9xf32>, %w: tensor<4x3x3x3xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>) {
  %y = solar.einsum @conv "nc(2p+r-1)(2q+s-1),kcrs->nkpq" (%x as X, %w as W) -> (Y: tensor<2x4x4x4xf32>) {
    Y += X * W
  }
  %z = solar.einsum @conv_loops "nc(2p+r-1)(2q+s-1),kcrs->nkpq" (%x as X, %w as W) -> (Z: tensor<2x4x4x4xf32>) {
    Z += X * W + 0.0
  }
  solar.return %y, %z
}
"""


def conv_ref(x: np.ndarray, w: np.ndarray, stride: int, pad: int, out: int) -> np.ndarray:
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    k, _, r, s = w.shape
    y = np.zeros((x.shape[0], k, out, out))
    for i in range(r):
        for j in range(s):
            patch = xp[:, :, i: i + stride * out: stride, j: j + stride * out: stride]
            y += np.einsum("nchw,kc->nkhw", patch, w[:, :, i, j])
    return y


def test_einsum_windows_zero_padding_blas_and_loops_agree() -> None:
    x, w = rand(2, 3, 9, 9), rand(4, 3, 3, 3, seed=1)
    y, z = sir_run(CONV, {"x": x, "w": w})
    ref = conv_ref(x, w, 2, 1, 4)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(z, ref, rtol=1e-5, atol=1e-5)


CAUSAL = """
solar.func @f(%q: tensor<6x4xf32>, %k: tensor<6x4xf32>) -> (tensor<6x6xf32>, tensor<6xf32>, tensor<6x6xf32>) {
  %s = solar.einsum @scores "id,jd->ij" where "j<=i" (%q as Q, %k as K) -> (S: tensor<6x6xf32>) {
    S += Q * K
  }
  %m = solar.einsum @rowmax "ij->i" where "j<=i" (%s as S) -> (M: tensor<6xf32>) {
    M max= S
  }
  %e = solar.einsum @e "ij,i->ij" where "j<=i, i<5" (%s as S, %m as M) -> (E: tensor<6x6xf32>) {
    E = exp(S - M)
    E = E + 1.0
  }
  solar.return %s, %m, %e
}
"""


def test_einsum_where_clauses() -> None:
    q, k = rand(6, 4), rand(6, 4, seed=1)
    s, m, e = sir_run(CAUSAL, {"q": q, "k": k})
    full = q.astype(np.float64) @ k.T
    tril = np.tril(np.ones((6, 6), dtype=bool))
    np.testing.assert_allclose(s, np.where(tril, full, 0.0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m, np.where(tril, full, -np.inf).max(1), rtol=1e-5, atol=1e-6)
    keep = tril & (np.arange(6)[:, None] < 5)
    # Outside the where-region an element is never computed: 0, then the epilogue runs on every element.
    want = np.where(keep, np.exp(np.where(tril, full, 0.0) - m[:, None]), 0.0) + 1.0
    np.testing.assert_allclose(e, want, rtol=1e-5, atol=1e-6)


def test_einsum_integer_and_max_reductions_use_loops() -> None:
    text = """
solar.func @f(%a: tensor<3x4xi32>, %b: tensor<4xi32>) -> (tensor<3xi32>, tensor<3xi32>) {
  %s = solar.einsum @dot "ij,j->i" (%a as A, %b as B) -> (S: tensor<3xi32>) {
    S += A * B
  }
  %m = solar.einsum @mx "ij,j->i" (%a as A, %b as B) -> (M: tensor<3xi32>) {
    M max= A - B
  }
  solar.return %s, %m
}
"""
    a = np.arange(12, dtype=np.int32).reshape(3, 4) - 5
    b = np.array([1, -2, 3, 4], dtype=np.int32)
    s, m = sir_run(text, {"a": a, "b": b})
    np.testing.assert_array_equal(s, a @ b)
    np.testing.assert_array_equal(m, (a - b).max(1))


# ---- composition ops --------------------------------------------------------------------------------------

SHAPES = """
solar.module @composition [B = 2] {
  solar.func @shapes(%x: tensor<Bx8x16xf32>, %ids: tensor<Bx4xi64>, %table: tensor<100x16xf32>, %flag: tensor<i1>)
      -> (tensor<Bx8x16xf32>, tensor<Bx128xf32>, tensor<Bx16x8xf32>, tensor<Bx4x8xf32>, tensor<Bx16x16xf32>,
        tensor<100x16xf32>, tensor<2x2xi64>) {
    %r = solar.reshape %x : tensor<Bx128xf32>
    %p = solar.permute %x {perm = [0, 2, 1]} : tensor<Bx16x8xf32>
    %s = solar.slice %x[0:B, 2:6, 0:16:2] : tensor<Bx4x8xf32>
    %row = solar.slice %x[0, 0:8, 0:16] : tensor<8x16xf32>
    %c = solar.concat %x, %x {axis = 1} : tensor<Bx16x16xf32>
    %bias = solar.constant 0.5 : tensor<16xf32>
    %bb = solar.broadcast %bias {dims = [2]} : tensor<Bx8x16xf32>
    %e = solar.gather %table, %ids {axis = 0} : tensor<Bx4x16xf32>
    %z = solar.constant 0.0 : tensor<100x16xf32>
    %acc = solar.scatter %z, %ids, %e {axis = 0, reduce = add} : tensor<100x16xf32>
    %k = solar.constant [[1, 0], [0, 1]] : tensor<2x2xi64>
    %u = solar.insert %row into %x[1, 0:8, 0:16] : tensor<Bx8x16xf32>
    %out = solar.if %flag -> tensor<Bx8x16xf32> {
      solar.yield %u
    } else {
      solar.yield %bb
    }
    solar.return %out, %r, %p, %s, %c, %acc, %k
  }
}
"""


def test_composition_ops() -> None:
    x = rand(2, 8, 16)
    table = rand(100, 16, seed=1)
    ids = np.array([[1, 5, 5, 99], [0, 1, 2, 3]], dtype=np.int64)
    for flag in (True, False):
        out, r, p, s, c, acc, k = sir_run(SHAPES, {"x": x, "ids": ids, "table": table,
                                                   "flag": np.array(flag)})
        if flag:
            want = x.copy()
            want[1] = x[0]
            np.testing.assert_array_equal(out, want)
        else:
            np.testing.assert_array_equal(out, np.full((2, 8, 16), 0.5, np.float32))
        np.testing.assert_array_equal(r, x.reshape(2, 128))
        np.testing.assert_array_equal(p, x.transpose(0, 2, 1))
        np.testing.assert_array_equal(s, x[:, 2:6, 0:16:2])
        np.testing.assert_array_equal(c, np.concatenate([x, x], axis=1))
        want_acc = np.zeros((100, 16), np.float32)
        np.add.at(want_acc, ids.reshape(-1), table[ids.reshape(-1)])
        np.testing.assert_allclose(acc, want_acc, rtol=1e-6)
        np.testing.assert_array_equal(k, np.eye(2, dtype=np.int64))


def test_gather_out_of_range_names_op_and_index() -> None:
    ids = np.array([[1, 5, 5, 100], [0, 1, 2, 3]], dtype=np.int64)
    with pytest.raises(RuntimeBoundsError, match=r"solar.gather at test.sir:\d+:\d+: index 100 at position \[0, 3\] "
                                                 r"of %ids is out of range for axis 0 of size 100"):
        sir_run(SHAPES, {"x": rand(2, 8, 16), "ids": ids, "table": rand(100, 16), "flag": np.array(True)})
    with pytest.raises(RuntimeBoundsError, match="index -1"):
        sir_run(SHAPES, {"x": rand(2, 8, 16), "ids": -ids, "table": rand(100, 16), "flag": np.array(True)})


def test_scatter_reductions() -> None:
    text = """
solar.func @f(%d: tensor<5xf32>, %i: tensor<4xi64>, %s: tensor<4xf32>)
    -> (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>) {
  %a = solar.scatter %d, %i, %s {axis = 0, reduce = none} : tensor<5xf32>
  %b = solar.scatter %d, %i, %s {axis = 0, reduce = max} : tensor<5xf32>
  %c = solar.scatter %d, %i, %s {axis = 0, reduce = mul} : tensor<5xf32>
  %e = solar.scatter %d, %i, %s {axis = 0, reduce = min} : tensor<5xf32>
  solar.return %a, %b, %c, %e
}
"""
    d = np.array([1, 2, 3, 4, 5], dtype=np.float32)
    i = np.array([0, 3, 0, 4], dtype=np.int64)
    s = np.array([10, -1, 20, 0.5], dtype=np.float32)
    a, b, c, e = sir_run(text, {"d": d, "i": i, "s": s})
    np.testing.assert_array_equal(a, [20, 2, 3, -1, 0.5])  # a repeated index keeps the last value
    np.testing.assert_array_equal(b, [20, 2, 3, 4, 5])
    np.testing.assert_array_equal(c, [200, 2, 3, -4, 2.5])
    np.testing.assert_array_equal(e, [1, 2, 3, -1, 0.5])


def test_calls_groups_and_entry() -> None:
    text = """
solar.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %c = solar.kernel @add(%a as A, %b as B) -> (C: tensor<4xf32>) {
    affine.for %i = 0 to 4 {
      C[%i] = A[%i] + B[%i]
    }
  }
  solar.return %c
}

solar.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %y = solar.call @add(%x, %x) : tensor<4xf32>
  %g = solar.group @g -> tensor<4xf32> {
    %z = solar.call @add(%y, %x) : tensor<4xf32>
    solar.yield %z
  }
  solar.return %x, %g
}
"""
    x = rand(4)
    same, g = sir_run(text, {"x": x})
    np.testing.assert_array_equal(same, x)
    np.testing.assert_allclose(g, 3 * x, rtol=1e-6)
    (c,) = sir_run(text, {"a": x, "b": x}, entry="add")
    np.testing.assert_allclose(c, 2 * x, rtol=1e-6)
    with pytest.raises(EntryError, match="no function @ad; did you mean 'add'"):
        sir_run(text, {"x": x}, entry="ad")


def test_slice_with_loop_index_out_of_range_is_reported() -> None:
    text = """
solar.func @f(%x: tensor<4x3xf32>) -> tensor<3xf32> {
  %z = solar.constant 0.0 : tensor<3xf32>
  %r = solar.for %t = 0 to 5 iter_args(%a = %z) -> tensor<3xf32> {
    %row = solar.slice %x[%t, 0:3] : tensor<3xf32>
    solar.yield %row
  }
  solar.return %r
}
"""
    with pytest.raises(RuntimeBoundsError, match=r"solar.slice at test.sir:5:\d+: index 4 in dimension 0 is "
                                                 r"outside \[0, 4\)"):
        sir_run(text, {"x": rand(4, 3)})


# ---- parameters, inputs, verification ------------------------------------------------------------------

PARAMS = """
solar.module @p [M, N = 3] {
  solar.func @f(%x: tensor<MxNxf32>) -> tensor<MxNxf32> {
    %y = solar.kernel @twice(%x as X) -> (Y: tensor<MxNxf32>) {
      affine.for %i = 0 to M {
        affine.for %j = 0 to N {
          Y[%i, %j] = X[%i, %j] * 2.0
        }
      }
    }
    solar.return %y
  }
}
"""


def test_size_parameters() -> None:
    x = rand(4, 3)
    (y,) = sir_run(PARAMS, {"x": x}, params={"M": 4})
    np.testing.assert_array_equal(y, 2 * x)
    (y,) = sir_run(PARAMS, {"x": rand(2, 5)}, params={"M": 2, "N": 5})
    assert y.shape == (2, 5)
    with pytest.raises(ParamError, match="size parameter M has no default; bind it with --param M=N"):
        sir_run(PARAMS, {"x": x})
    with pytest.raises(ParamError, match="no size parameter Q"):
        sir_run(PARAMS, {"x": x}, params={"M": 4, "Q": 1})
    with pytest.raises(ParamError, match="must be a positive integer"):
        sir_run(PARAMS, {"x": x}, params={"M": 0})


def test_the_callers_module_is_not_modified() -> None:
    module = parse_module(PARAMS, "p.sir")
    run(module, {"x": rand(4, 3)}, {"M": 4})
    assert [p.name for p in module.params] == ["M", "N"]
    assert "M" in str(module.funcs[0].args[0].type)


def test_input_errors() -> None:
    a, b = rand(5, 7), rand(7, 3)
    with pytest.raises(InputError, match=r"missing input %b for @mm\(%a, %b\)"):
        sir_run(MATMUL, {"a": a})
    with pytest.raises(InputError, match="unexpected input c"):
        sir_run(MATMUL, {"a": a, "b": b, "c": b})
    with pytest.raises(InputError, match=r"input %b: expected shape \[7, 3\] \(tensor<7x3xf32>\), got \[3, 7\]"):
        sir_run(MATMUL, {"a": a, "b": b.T})
    with pytest.raises(InputError, match=r"input %a: expected float32 \(f32\) but got float64"):
        sir_run(MATMUL, {"a": a.astype(np.float64), "b": b})
    with pytest.raises(InputError, match="takes 2 input"):
        sir_run(MATMUL, [a])


def test_module_that_does_not_verify_after_binding() -> None:
    text = """
solar.module @bad [M = 4] {
  solar.func @f(%x: tensor<Mxf32>) -> tensor<4xf32> {
    %y = solar.reshape %x : tensor<4xf32>
    solar.return %y
  }
}
"""
    engine = DiagnosticEngine()
    module = parse_module(text, "bad.sir", engine)
    assert run(module, {"x": rand(4)})[0].shape == (4,)
    with pytest.raises(VerificationError) as info:
        prepare(module, {"M": 5}, diagnostics=engine)
    assert "bad.sir:4:" in info.value.rendered and "element count" in info.value.rendered


MASKED_PV = """
solar.func @f(%e: tensor<6x6xf32>, %v: tensor<6x3xf32>) -> tensor<6x3xf32> {
  %o = solar.einsum @pv "ij,jd->id" where "j<=i" (%e as E, %v as V) -> (O: tensor<6x3xf32>) {
    O += E * V
  }
  solar.return %o
}
"""


def test_einsum_constraint_on_a_reduced_index_masks_an_operand() -> None:
    plan = blas_plan(einsum_op(MASKED_PV))
    assert plan is not None and plan.operand_masks[0] and not plan.mask
    e, v = rand(6, 6), rand(6, 3, seed=1)
    (o,) = sir_run(MASKED_PV, {"e": e, "v": v})
    np.testing.assert_allclose(o, np.tril(e) @ v, rtol=1e-5, atol=1e-6)


def test_masked_contraction_meeting_inf_runs_the_exact_loops() -> None:
    e, v = rand(6, 6), rand(6, 3, seed=1)
    v[5] = np.inf  # only rows i >= 5 may read it; 0 * inf = NaN must not leak into rows 0..4
    (o,) = sir_run(MASKED_PV, {"e": e, "v": v})
    np.testing.assert_allclose(o[:5], np.tril(e)[:5, :5] @ v[:5], rtol=1e-5, atol=1e-6)
    assert not np.isfinite(o[5]).any()


VECTOR_CASES = {
    "rowsum_exp": """
solar.func @f(%x: tensor<7x9xf32>, %m: tensor<7xf32>) -> tensor<7xf32> {
  %s = solar.einsum @s "ij,i->i" where "j<=i+1" (%x as X, %m as M) -> (S: tensor<7xf32>) {
    S += exp(X - M)
    S = log(S) + 1.0
  }
  solar.return %s
}
""",
    "mixed": """
solar.func @f(%x: tensor<5x6xf32>, %m: tensor<7xf32>) -> tensor<5x6xi32> {
  %s = solar.einsum @s "ij,(i+1)->ij" (%x as X, %m as M) -> (S: tensor<5x6xi32>) {
    S = select(tanh(X) > 0.5 or isnan(X), cast<i32>(X * 100.0), cast<i32>(erf(M) * 10.0) floordiv 3)
  }
  solar.return %s
}
""",
    "window_max": """
solar.func @f(%x: tensor<2x10xbf16>, %w: tensor<3xbf16>) -> tensor<2x4xbf16> {
  %s = solar.einsum @pool "n(3p+r-1),r->np" (%x as X, %w as W) -> (S: tensor<2x4xbf16>) {
    S max= sigmoid(X) * W
  }
  solar.return %s
}
""",
}


@pytest.mark.parametrize("name", list(VECTOR_CASES))
def test_numpy_einsum_path_agrees_with_the_loop_nest(name: str) -> None:
    from solar.backends import jit
    from solar.backends.codegen_einsum import generate_einsum
    from solar.backends.dtypes import to_storage
    from solar.backends.executor import _Einsum

    op = einsum_op(VECTOR_CASES[name])
    fast = _Einsum(op)
    assert fast.vector is not None, "a transcendental einsum takes the NumPy path"
    slow = _Einsum(op)
    slow.vector = None
    slow.gen = generate_einsum(op)
    slow.fn = jit.dispatcher(slow.gen.source)
    slow.plan = None
    rng = np.random.default_rng(4)
    inputs = []
    for b in op.inputs:
        t = b.value.type
        assert t is not None
        inputs.append(to_storage(rng.standard_normal(t.concrete_shape()).astype(np.float32), t.dtype))
    a, b = fast(inputs), slow(inputs)
    assert a.dtype == b.dtype
    np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=1e-5, atol=1e-6)


def test_einsum_reads_indices_as_values_and_takes_ranges_from_where() -> None:
    text = """
solar.func @f(%x: tensor<2x9xf32>, %s: tensor<4x4xf32>) -> (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>) {
  %m = solar.einsum @pool "n(2p+r)->np" where "r<3" (%x as X) -> (M: tensor<2x4xf32>) {
    M max= X
  }
  %c = solar.einsum @mask "ij->ij" (%s as S) -> (C: tensor<4x4xf32>) {
    C = select(%j <= %i, S, -inf)
  }
  %e = solar.einsum @lse "ij->i" (%s as S) -> (E: tensor<4xf32>) {
    E += exp(select(%j <= %i, S, -inf))
  }
  solar.return %m, %c, %e
}
"""
    x, s = rand(2, 9), rand(4, 4, seed=1)
    m, c, e = sir_run(text, {"x": x, "s": s})
    np.testing.assert_array_equal(m, np.stack([x[:, 2 * p: 2 * p + 3].max(1) for p in range(4)], axis=1))
    masked = np.where(np.tril(np.ones((4, 4), dtype=bool)), s, -np.inf)
    np.testing.assert_array_equal(c, masked)
    np.testing.assert_allclose(e, np.exp(masked).sum(1), rtol=1e-6)


def test_einsum_with_a_windowed_result_transposed_conv() -> None:
    text = """
solar.func @f(%x: tensor<1x4x5xf32>, %w: tensor<4x2x3xf32>) -> (tensor<1x2x9xf32>, tensor<1x2x9xf32>) {
  %y = solar.einsum @tconv "ncp,ckr->nk(2p+r-1)" where "2p+r-1>=0,2p+r-1<9" (%x as X, %w as W)
      -> (Y: tensor<1x2x9xf32>) {
    Y += X * W
  }
  %z = solar.einsum @tconv_relu "ncp,ckr->nk(2p+r-1)" (%x as X, %w as W) -> (Z: tensor<1x2x9xf32>) {
    Z += X * W
    Z = max(Z, 0.0)
  }
  solar.return %y, %z
}
"""
    x, w = rand(1, 4, 5), rand(4, 2, 3, seed=1)
    y, z = sir_run(text, {"x": x, "w": w})
    want = np.zeros((1, 2, 9))
    for p in range(5):
        for r in range(3):
            o = 2 * p + r - 1
            if 0 <= o < 9:  # position 9 (p = 4, r = 2) falls outside the result: skipped
                want[0, :, o] += np.einsum("c,ck->k", x[0, :, p], w[:, :, r])
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(z, np.maximum(want, 0), rtol=1e-5, atol=1e-6)


def test_single_operand_reductions_run_as_numpy_reductions() -> None:
    text = """
solar.func @f(%x: tensor<4x5xf32>, %i: tensor<4x5xi32>, %b: tensor<4x5xi1>)
    -> (tensor<4xf32>, tensor<5xf32>, tensor<4xi32>, tensor<4xi1>, tensor<4xf32>) {
  %mx = solar.einsum @rowmax "ij->i" (%x as X) -> (M: tensor<4xf32>) {
    M max= X
  }
  %mn = solar.einsum @colmin "ij->j" where "j<i" (%x as X) -> (N: tensor<5xf32>) {
    N min= X
  }
  %s = solar.einsum @isum "ij->i" (%i as I) -> (S: tensor<4xi32>) {
    S += I
  }
  %a = solar.einsum @any "ij->i" (%b as B) -> (A: tensor<4xi1>) {
    A max= B
  }
  %p = solar.einsum @prod "ij->i" where "j<=i" (%x as X) -> (P: tensor<4xf32>) {
    P *= X
  }
  solar.return %mx, %mn, %s, %a, %p
}
"""
    for name in ("rowmax", "colmin", "isum", "any", "prod"):
        assert blas_plan(next(op for op in parse_and_verify(text).walk()
                              if isinstance(op, EinsumOp) and op.symbol == name)) is not None
    x = rand(4, 5)
    x[2, 3] = np.nan
    i = np.full((4, 5), 2**30, dtype=np.int32)
    b = np.zeros((4, 5), dtype=bool)
    b[1, 4] = True
    mx, mn, s, a, p = sir_run(text, {"x": x, "i": i, "b": b})
    assert np.isnan(mx[2]) and np.array_equal(mx[[0, 1, 3]], x[[0, 1, 3]].max(1))
    below = np.tril(np.ones((4, 5), dtype=bool), -1)
    want_mn = np.where(below, x, np.inf).min(0)
    np.testing.assert_array_equal(mn, want_mn)  # the NaN at [2, 3] lies outside the where-region
    assert mn[3] == mn[4] == np.inf, "an empty min-reduction is the identity"
    np.testing.assert_array_equal(s, (i.astype(np.int64).sum(1)).astype(np.int32))  # wraps at 32 bits
    np.testing.assert_array_equal(a, [False, True, False, False])
    want_p = np.where(np.tril(np.ones((4, 5), dtype=bool)), x, 1.0).prod(1)
    np.testing.assert_allclose(p[[0, 1, 3]], want_p[[0, 1, 3]], rtol=1e-6)


def test_padding_guards_of_a_lifted_conv_need_no_mask() -> None:
    text = """
solar.func @f(%x: tensor<2x3x9x9xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x4x4xf32> {
  %y = solar.einsum @conv "nc(2p+r-1)(2q+s-1),kcrs->nkpq" where "2p+r-1>=0,2p+r-1<9,2q+s-1>=0,2q+s-1<9"
      (%x as X, %w as W) -> (Y: tensor<2x4x4x4xf32>) {
    Y += X * W
  }
  solar.return %y
}
"""
    plan = blas_plan(einsum_op(text))
    assert plan is not None and not any(plan.operand_masks) and plan.guarded == [True, False]
    x, w = rand(2, 3, 9, 9), rand(4, 3, 3, 3, seed=1)
    (y,) = sir_run(text, {"x": x, "w": w})
    np.testing.assert_allclose(y, conv_ref(x, w, 2, 1, 4), rtol=1e-5, atol=1e-5)


CONV_LOOPS = """
solar.func @conv(%x: tensor<2x3x7x7xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x7x7xf32> {
  %y = solar.kernel @conv(%x as X, %w as W) -> (Y: tensor<2x4x7x7xf32>) {
    affine.for %n = 0 to 2 {
      affine.for %k = 0 to 4 {
        affine.for %p = 0 to 7 {
          affine.for %q = 0 to 7 {
            affine.for %c = 0 to 3 {
              affine.for %r = 0 to 3 {
                affine.for %s = 0 to 3 {
                  affine.if %p + %r - 1 >= 0 and %p + %r - 1 < 7 and %q + %s - 1 >= 0 and %q + %s - 1 < 7 {
                    Y[%n, %k, %p, %q] += X[%n, %c, %p + %r - 1, %q + %s - 1] * W[%k, %c, %r, %s]
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  solar.return %y
}
"""


def test_padded_conv_loops_run_with_the_output_column_innermost_and_no_branch_in_it() -> None:
    gen = generate_kernel(first_kernel(CONV_LOOPS), min_parallel_points=0)
    lines = [line.strip() for line in gen.source.splitlines()]
    innermost = max(n for n, line in enumerate(lines) if line.startswith("for "))
    assert lines[innermost].startswith("for i6 in range(max(0, ")  # q, its bounds from the guard
    assert lines[innermost + 1].startswith("t2[i0, i1, i2, i6] +=")
    assert not gen.checks and gen.parallel
    x, w = rand(2, 3, 7, 7), rand(4, 3, 3, 3, seed=1)
    (y,) = sir_run(CONV_LOOPS, {"x": x, "w": w})
    np.testing.assert_allclose(y, conv_ref(x, w, 1, 1, 7), rtol=1e-5, atol=1e-5)


def test_a_run_of_too_many_statements_is_refused_before_it_starts() -> None:
    """Issue 28: a legal loop of 2^62 trips hung solar-run; its exact statement count is checked first."""
    from pathlib import Path

    from solar.backends.inputs import WORK_LIMIT, check_work, run_statements

    spin = Path(__file__).parents[1] / "lit" / "solar-run" / "Inputs" / "spin.sir"
    module = parse_module(spin.read_text(), str(spin), DiagnosticEngine())
    assert run_statements(prepare(module, {"N": 1000})) == 1000
    check_work(prepare(module, {"N": 1000}))
    huge = prepare(module, {"N": 1 << 62})
    assert run_statements(huge) == 1 << 62 > WORK_LIMIT
    with pytest.raises(InputError, match=r"executes 4611686018427387904 statements \(N=4611686018427387904\), "
                                         r"more than the limit of 1000000000000: bind smaller sizes with --param"):
        check_work(huge)
    with pytest.raises(InputError, match="more than the limit of 999"):
        check_work(prepare(module, {"N": 1000}), limit=999)
