"""The precision floor (docs/sol.md, "Precision floor"): each float contraction priced at the lowest precision the
user allows where that is faster than its own, never slower; compute only, the bytes stay the program's; every
report says the policy in force."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solar
from solar.backends.cost import CostError, CostModel, Peaks
from solar.backends.precision_policy import PRECISION_FLOORS, floor_applies, policy_text
from solar.backends.report import analyse
from solar.backends.sweep import CostSurface
from solar.errors import BadOptionError
from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.dtypes import DType
from solar.ir.ops import ModuleOp
from solar.ir.parser import parse_module
from solar.ir.pass_manager import PassContext
from solar.passes.lift_einsum import LiftEinsum
from solar.targets.loader import list_targets, load_target

H100 = load_target("h100")
N = 4096
MATMUL_FLOPS = 2 * N**3  # 137438953472

MM = """
solar.module @mm [N = 4096] {
  solar.func @main(%x: tensor<NxNxf32>, %w: tensor<NxNxf32>) -> tensor<NxNxf32> {
    %h = solar.kernel @fc(%x as X, %w as W) -> (H: tensor<NxNxf32>) {
      affine.for %i = 0 to N {
        affine.for %j = 0 to N {
          affine.for %k = 0 to N {
            H[%i, %j] += X[%i, %k] * W[%k, %j]
          }
        }
      }
    }
    solar.return %h
  }
}
"""


def test_the_floor_prices_wider_float_contractions_at_its_peak() -> None:
    floored, plain = Peaks(H100, "bf16"), Peaks(H100)
    for dtype in (DType.F32, DType.TF32, DType.F64):
        c = floored.choice(dtype, True)
        assert (c.precision, c.unit, c.flop_per_s) == ("bf16", "tensor", 989.4e12)
        assert "precision floor bf16" in c.reason
    # Already at least as cheap: kept at its own peak (f16's equals bf16's on H100; fp8 and int8 are faster).
    assert floored.choice(DType.F16, True) == plain.choice(DType.F16, True)
    assert floored.choice(DType.F8E4M3, True).flop_per_s == 1979e12 == plain.choice(DType.F8E4M3, True).flop_per_s
    assert floored.choice(DType.I8, True) == plain.choice(DType.I8, True)
    # Vector work is not a contraction: the floor leaves it alone.
    assert floored.choice(DType.F32, False) == plain.choice(DType.F32, False)
    # A TF32 floor: f32 at 494.7 TFLOP/s; bf16 and f16 are narrower than it, so untouched.
    tf32 = Peaks(H100, "tf32")
    assert tf32.choice(DType.F32, True).flop_per_s == 494.7e12
    assert tf32.choice(DType.BF16, True) == plain.choice(DType.BF16, True)


def test_the_roofs_drawn_are_the_floored_ones() -> None:
    peaks = Peaks(H100, "bf16")
    peaks.choice(DType.F32, True)
    assert [(c.precision, c.unit) for c in peaks.used()] == [("bf16", "tensor")]  # not fp32 vector too


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(list_targets(include_host=False)), st.sampled_from(list(DType)),
       st.sampled_from(sorted(PRECISION_FLOORS)))
def test_a_floor_never_makes_a_contraction_slower(target: str, dtype: DType, floor: str) -> None:
    t = load_target(target)
    try:
        own = Peaks(t).choice(dtype, True)
    except CostError:  # the target has no figure for the dtype: nothing to compare
        return
    c = Peaks(t, floor).choice(dtype, True)
    assert c.flop_per_s >= own.flop_per_s
    if not floor_applies(dtype, PRECISION_FLOORS[floor]):
        assert c == own


def test_a_bad_floor_is_one_error() -> None:
    with pytest.raises(CostError, match=r"^bad precision floor 'bf8': expected one of tf32, bf16, fp16, f16, fp8$"):
        Peaks(H100, "bf8")


def _module() -> ModuleOp:
    module = parse_module(MM, "mm.sir")
    LiftEinsum().apply(PassContext(DiagnosticEngine(), report=lambda _: None), module)
    return module


def test_the_cost_model_prices_compute_only() -> None:
    model = CostModel(_module())
    floored, plain = analyse(model, Peaks(H100, "bf16"), None), analyse(model, Peaks(H100), None)
    f, p = floored.modes["fused"], plain.modes["fused"]
    assert f.flops == p.flops == MATMUL_FLOPS and f.bytes == p.bytes == 3 * N * N * 4  # bytes not halved
    assert math.isclose(f.seconds, MATMUL_FLOPS / 989.4e12, rel_tol=1e-12)  # 138.9 µs
    assert math.isclose(p.seconds, MATMUL_FLOPS / 66.9e12, rel_tol=1e-12)  # 2.054 ms


def test_a_sweep_prices_under_the_floor_as_a_point_does() -> None:
    surface = CostSurface(_module(), [H100], precision_floor="bf16")
    for n in (256, 4096):
        fused = next(c for c in surface.at({"N": n}) if c.mode == "fused")
        # N = 256 is bandwidth-bound (intensity 42.7 FLOP/B); N = 4096 compute-bound at bf16.
        assert math.isclose(fused.seconds, max(2 * n**3 / 989.4e12, 12 * n * n / 3.35e12), rel_tol=1e-12)


def test_the_api_reports_the_policy_everywhere() -> None:
    analysis = solar.analyze(MM, targets="h100", precision_floor="bf16")
    doc = analysis.to_json()
    assert doc["precision_floor"] == "bf16"
    assert doc["precision_policy"] == policy_text("framework", "bf16")
    assert doc["verdict"][0].startswith("Precision floor bf16 in force: contractions are priced at bf16")
    assert not any("allowing TF32" in s for s in doc["verdict"])  # the floor already prices them on tensor cores
    assert math.isclose(doc["targets"][0]["modes"]["fused"]["time_s"], MATMUL_FLOPS / 989.4e12, rel_tol=1e-12)
    page = analysis.to_html()
    assert "precision floor bf16 (float contractions at bf16 where that is faster)" in page
    script = page.split('id="solar-report">', 1)[1].split("</script>", 1)[0]
    assert json.loads(script)["precision_floor"] == "bf16"
    plain = solar.analyze(MM, targets="h100")
    assert plain.to_json()["precision_floor"] is None
    assert "Precision policy: f32 contractions as the framework runs each kernel (exact FP32 unless it says TF32); " \
        "no precision floor." in plain.results.terminal()
    # The API's sweep prices under the analysis's floor too.
    swept = analysis.sweep(N=[4096])
    assert (swept["precision_floor"], swept["precision_policy"]) == ("bf16", doc["precision_policy"])
    records = [r for r in swept["records"] if r["mode"] == "fused"]
    assert math.isclose(records[0]["time_s"], MATMUL_FLOPS / 989.4e12, rel_tol=1e-12)


def test_the_api_refuses_a_bad_floor() -> None:
    with pytest.raises(BadOptionError, match=r"^sol: bad precision floor 'bf8': expected one of tf32, bf16, fp16, "
                                             r"f16, fp8$"):
        solar.analyze(MM, targets="h100", precision_floor="bf8")
