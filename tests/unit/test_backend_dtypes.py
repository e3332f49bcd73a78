"""Narrow float types: rounding at every store (the same as ml_dtypes' nearest-even conversion), f32
computation, f32 accumulation in reduction buffers, and the storage dtypes of inputs and outputs."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from solar.backends import runtime
from solar.backends.dtypes import STORAGE, round_tf32
from solar.backends.errors import InputError
from solar.backends.executor import run
from solar.ir.dtypes import DType
from solar.ir.parser import parse_module
from solar.ir.printer import print_module


def sir_run(text: str, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    return run(parse_module(text, "t.sir"), inputs)


def special_values() -> np.ndarray:
    rng = np.random.default_rng(0)
    parts = [
        rng.standard_normal(4000) * 10.0 ** rng.integers(-12, 12, 4000),
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 65504, 65520, 65519.99, 448, 464, 465, 480,
                  57344, 61440, 61439, 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26, 2.0 ** -9, 2.0 ** -10, 1e-45,
                  3.3895314e38, 3.39e38, 3.4e38]),
        # Exact ties between two bf16 values: must round to the even one.
        (np.arange(1, 200, dtype=np.float32) * 2 + 1) * 2.0 ** -8 + 1,
    ]
    return np.concatenate(parts).astype(np.float32)


@pytest.mark.parametrize(("rounder", "target"), [
    ("rnd_bf16", ml_dtypes.bfloat16), ("rnd_f16", np.float16), ("rnd_f8e4m3", ml_dtypes.float8_e4m3fn),
    ("rnd_f8e5m2", ml_dtypes.float8_e5m2)])
def test_store_rounding_matches_ml_dtypes(rounder: str, target: type) -> None:
    fn = getattr(runtime, rounder)
    values = special_values()
    got = np.array([fn(v) for v in values], dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        want = values.astype(target).astype(np.float32)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    assert same.all(), f"{rounder}: first difference at {values[~same][:5]}: {got[~same][:5]} vs {want[~same][:5]}"


def test_tf32_rounding_keeps_ten_mantissa_bits() -> None:
    values = special_values()
    got = np.array([runtime.rnd_tf32(v) for v in values], dtype=np.float32)
    np.testing.assert_array_equal(got, round_tf32(values))
    finite = np.isfinite(got) & (np.abs(got) > 1e-37)
    bits = got[finite].view(np.uint32)
    assert np.all(bits & 0x1FFF == 0), "tf32 keeps 10 of f32's 23 mantissa bits"
    assert runtime.rnd_tf32(np.float32(1 + 2 ** -11)) == 1.0  # a tie rounds to even
    assert runtime.rnd_tf32(np.float32(1 + 3 * 2 ** -11)) == np.float32(1 + 2 ** -9)


BF16_CHAIN = """
solar.func @f(%x: tensor<4xbf16>, %w: tensor<4xbf16>) -> (tensor<4xbf16>, tensor<bf16>, tensor<bf16>) {
  %y, %s, %c = solar.kernel @f(%x as X, %w as W) -> (Y: tensor<4xbf16>, S: tensor<bf16>, C: tensor<bf16>) {
    affine.for %i = 0 to 4 {
      Y[%i] = X[%i] * W[%i] + 1.0
      S[] += X[%i]
      C[] = X[%i]
    }
    affine.for %i = 0 to 4 {
      C[] = C[] + X[%i]
    }
  }
  solar.return %y, %s, %c
}
"""


def test_bf16_store_rounding_and_f32_accumulation() -> None:
    x = np.array([256, 1, 1, 1], dtype=np.float32).astype(ml_dtypes.bfloat16)
    w = np.array([1.00390625, 3, 1, 1], dtype=np.float32).astype(ml_dtypes.bfloat16)
    y, s, c = sir_run(BF16_CHAIN, {"x": x, "w": w})
    assert y.dtype == ml_dtypes.bfloat16 and s.dtype == ml_dtypes.bfloat16
    # Each product is computed in f32, then the store rounds once to bf16.
    want_y = (x.astype(np.float32) * w.astype(np.float32) + 1).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(y, want_y)
    # The reduction buffer S accumulates in f32 (256 + 1 + 1 + 1 = 259) and rounds once at the end: 260.
    assert float(s) == 260.0
    # C is a plain buffer: every store rounds, so 256 + 1 = 257 → 256 each time and the 1s are lost.
    assert float(c) == 256.0


def test_f16_and_f8_stores_round() -> None:
    text = """
solar.func @f(%x: tensor<6xf32>) -> (tensor<6xf16>, tensor<6xf8e4m3>, tensor<6xf8e5m2>, tensor<6xtf32>) {
  %a, %b, %c, %d = solar.kernel @f(%x as X)
      -> (A: tensor<6xf16>, B: tensor<6xf8e4m3>, C: tensor<6xf8e5m2>, D: tensor<6xtf32>) {
    affine.for %i = 0 to 6 {
      A[%i] = cast<f16>(X[%i])
      B[%i] = cast<f8e4m3>(X[%i])
      C[%i] = cast<f8e5m2>(X[%i])
      D[%i] = cast<tf32>(X[%i])
    }
  }
  solar.return %a, %b, %c, %d
}
"""
    x = np.array([1.0001, 470.0, 1e5, -3.3, 0.0123, 70000.0], dtype=np.float32)
    a, b, c, d = sir_run(text, {"x": x})
    assert a.dtype == np.float16 and b.dtype == ml_dtypes.float8_e4m3fn and c.dtype == ml_dtypes.float8_e5m2
    assert d.dtype == np.float32
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(a, x.astype(np.float16))
        np.testing.assert_array_equal(b.astype(np.float32), x.astype(ml_dtypes.float8_e4m3fn).astype(np.float32))
        np.testing.assert_array_equal(c.astype(np.float32), x.astype(ml_dtypes.float8_e5m2).astype(np.float32))
    np.testing.assert_array_equal(d, round_tf32(x))
    assert np.isnan(b[1].astype(np.float32)), "470 overflows E4M3 (no infinity): NaN, as ml_dtypes"


def test_bf16_inputs_accept_float32_and_raw_npz_bytes(tmp_path: object) -> None:
    x32 = np.array([1.0, 1.00390625, 3.0, -2.5], dtype=np.float32)
    w = np.ones(4, dtype=ml_dtypes.bfloat16)
    y_from_f32, *_ = sir_run(BF16_CHAIN, {"x": x32, "w": w})
    y_from_bf16, *_ = sir_run(BF16_CHAIN, {"x": x32.astype(ml_dtypes.bfloat16), "w": w})
    np.testing.assert_array_equal(y_from_f32, y_from_bf16)
    raw = x32.astype(ml_dtypes.bfloat16).view(np.dtype("V2"))  # what np.savez + np.load give back
    y_raw, *_ = sir_run(BF16_CHAIN, {"x": raw, "w": w})
    np.testing.assert_array_equal(y_raw, y_from_bf16)
    with pytest.raises(InputError, match=r"expected bfloat16 \(bf16\) but got float64"):
        sir_run(BF16_CHAIN, {"x": x32.astype(np.float64), "w": w})


def test_storage_dtypes() -> None:
    assert STORAGE[DType.BF16] == np.dtype(ml_dtypes.bfloat16)
    assert STORAGE[DType.F8E4M3] == np.dtype(ml_dtypes.float8_e4m3fn)
    assert STORAGE[DType.TF32] == np.dtype(np.float32)
    assert STORAGE[DType.I1] == np.dtype(np.bool_)


def test_bf16_einsum_accumulates_in_f32() -> None:
    text = """
solar.func @f(%a: tensor<2x300xbf16>, %b: tensor<300x2xbf16>) -> (tensor<2x2xbf16>, tensor<2xbf16>) {
  %c = solar.einsum @mm "ik,kj->ij" (%a as A, %b as B) -> (C: tensor<2x2xbf16>) {
    C += A * B
  }
  %s = solar.einsum @rowsum "ik->i" (%a as A) -> (S: tensor<2xbf16>) {
    S += A * 1.0 + 0.0
  }
  solar.return %c, %s
}
"""
    a = np.ones((2, 300), dtype=ml_dtypes.bfloat16)
    b = np.ones((300, 2), dtype=ml_dtypes.bfloat16)
    c, s = sir_run(text, {"a": a, "b": b})
    # 300 in bf16 is 300 exactly; a bf16 accumulator would stop at 256 (256 + 1 rounds back to 256).
    np.testing.assert_array_equal(c.astype(np.float32), np.full((2, 2), 300.0))
    np.testing.assert_array_equal(s.astype(np.float32), [300.0, 300.0])


NARROW_INTS = """solar.func @f(%x: tensor<4x3xu8>, %y: tensor<4xi16>) -> (tensor<4xu8>, tensor<4xi16>, tensor<4x3xu8>) {
  %s = solar.kernel @sum(%x as X) -> (S: tensor<4xu8>) {
    affine.for %i = 0 to 4 {
      affine.for %j = 0 to 3 {
        S[%i] += X[%i, %j]
      }
    }
  }
  %b = solar.kernel @scale(%y as Y) -> (B: tensor<4xi16>) {
    affine.for %i = 0 to 4 {
      B[%i] = Y[%i] * cast<i16>(1000) - cast<i16>(7)
    }
  }
  %d = solar.kernel @sub(%x as X) -> (D: tensor<4x3xu8>) {
    affine.for %i = 0 to 4 {
      affine.for %j = 0 to 3 {
        D[%i, %j] = X[%i, %j] - cast<u8>(10) + cast<u8>(-1)
      }
    }
  }
  solar.return %s, %b, %d
}
"""


@pytest.mark.parametrize("lift", [False, True])
def test_i16_and_u8_wrap_at_their_width(lift: bool) -> None:
    """torch.int16 and torch.uint8 (issue 36): stored as numpy's int16 and uint8, wrapping like them in the
    Numba kernels and in the lifted einsums alike; `cast<u8>(-1)` is 255."""
    import copy

    from solar.ir import DiagnosticEngine
    from solar.ir.pass_manager import PassContext, PassManager
    from solar.passes import registry

    module = parse_module(NARROW_INTS, "<narrow>")
    if lift:
        module = copy.deepcopy(module)
        PassManager(registry.parse_pipeline("lift-einsum")).run(module, PassContext(DiagnosticEngine(),
                                                                                     report=lambda _: None))
        assert "solar.einsum" in print_module(module)
    x = np.array([[0, 5, 20], [255, 255, 1], [100, 100, 100], [9, 10, 11]], np.uint8)
    y = np.array([1, 40, -33, 32767], np.int16)
    s, b, d = run(module, {"x": x, "y": y})
    assert s.dtype == np.uint8 and s.tolist() == [25, 255, 44, 30]
    assert b.dtype == np.int16 and b.tolist() == [993, -25543, 32529, -1007]
    assert d.dtype == np.uint8 and d.tolist() == (x.astype(np.int64) - 11).astype(np.uint8).tolist()
