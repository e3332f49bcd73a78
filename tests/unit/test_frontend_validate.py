"""Validation: dtype-aware comparison, size choice, and the record kept in the module."""

from __future__ import annotations

import numpy as np

from solar.frontends.validate import ValidationReport, compare, record, small_sizes, validate
from solar.ir import parse_and_verify, print_module
from solar.ir.dtypes import DType

MODULE = """
solar.module @m [BATCH = 64] {
  solar.func @f(%x: tensor<BATCHx4xf32>) -> tensor<BATCHx4xf32> {
    %y = solar.kernel @double(%x as X) -> (Y: tensor<BATCHx4xf32>) {
      affine.for %i = 0 to BATCH {
        affine.for %j = 0 to 4 {
          Y[%i, %j] = X[%i, %j] * 2.0
        }
      }
    }
    solar.return %y
  }
}
"""


def test_float_tolerance_scales_with_the_values() -> None:
    g = np.array([1.5, 1.0, -2.0], np.float32)
    assert compare(g * (1 + 1e-5), g, DType.F32, 0).ok
    bad = compare(g + np.array([0, 0, 0.01], np.float32), g, DType.F32, 0)
    assert not bad.ok and bad.mismatches == 1 and "rtol" in bad.why
    # An element near zero among large ones (cancellation in a long sum) is judged against the mean magnitude.
    big = np.array([1000.0, 1e-3, -2.0], np.float32)
    assert compare(big + np.array([0, 0.02, 0], np.float32), big, DType.F32, 0).ok
    # bf16 tolerates what f32 does not.
    assert compare(g * 1.01, g, DType.BF16, 0).ok
    assert not compare(g * 1.01, g, DType.F32, 0).ok


def test_nan_inf_and_integers() -> None:
    g = np.array([np.nan, np.inf, 1.0])
    assert compare(g.copy(), g, DType.F32, 0).ok
    assert not compare(np.array([0.0, np.inf, 1.0]), g, DType.F32, 0).ok
    assert not compare(np.array([np.nan, -np.inf, 1.0]), g, DType.F32, 0).ok
    assert compare(np.array([1, 2]), np.array([1, 2]), DType.I64, 0).ok
    assert not compare(np.array([1, 3]), np.array([1, 2]), DType.I64, 0).ok
    assert "shape" in compare(np.zeros(3), np.zeros(4), DType.F32, 0).why


def test_sizes_and_record_round_trip() -> None:
    module = parse_and_verify(MODULE)
    assert small_sizes(module) == {"BATCH": 2}
    assert small_sizes(module, full=True) == {"BATCH": 64}

    def case() -> tuple[list[np.ndarray], list[np.ndarray]]:
        x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
        return [x], [x * 2]

    report = validate(module, case, {"BATCH": 2}, seed=7)
    assert report.ok and report.reduced and report.max_abs_error == 0.0
    record(module, report)
    text = print_module(module)
    assert "validation = {status = \"passed\", seed = 7, sizes = {BATCH = 2}, reduced = true" in text
    assert "[BATCH = 64]" in text  # the module keeps its full size
    assert print_module(parse_and_verify(text)) == text
    assert any("reduced sizes" in line for line in report.header())


def test_failures_are_reports_not_exceptions() -> None:
    module = parse_and_verify(MODULE)

    def wrong() -> tuple[list[np.ndarray], list[np.ndarray]]:
        x = np.ones((2, 4), np.float32)
        return [x], [x * 3]

    report = validate(module, wrong, {"BATCH": 2})
    assert not report.ok and "output 0" in report.summary()

    def broken() -> tuple[list[np.ndarray], list[np.ndarray]]:
        raise RuntimeError("index out of range")

    report = validate(module, broken, {"BATCH": 2})
    assert not report.ok and "original program failed" in report.error
    assert isinstance(report, ValidationReport)


def test_an_ill_conditioned_output_is_judged_against_the_original_in_float64() -> None:
    # Training batch norm over four elements per channel, layer after layer (MobileNetV2 at reduced sizes):
    # both f32 runs, the original's and the IR's, land about 1.6% of the mean magnitude off the float64 run.
    rng = np.random.default_rng(0)
    wide = rng.normal(size=(4, 1000))
    golden = (wide + rng.normal(scale=0.006, size=wide.shape)).astype(np.float32)
    ir = (wide + rng.normal(scale=0.006, size=wide.shape)).astype(np.float32)
    plain = compare(ir, golden, DType.F32, 0, 1280)
    assert not plain.ok and plain.mismatches > 1000
    judged = compare(ir, golden, DType.F32, 0, 1280, wide)
    assert judged.ok and judged.explained == plain.mismatches
    assert 0.02 < judged.conditioning < 0.04
    # A wrong lowering (an activation clipped at 1, an output scaled by 1.05) is still far more off than the rounding.
    for wrong in (np.minimum(ir, 1.0), ir * 1.05):
        bad = compare(wrong, golden, DType.F32, 0, 1280, wide)
        assert not bad.ok and bad.conditioning == 0.0
