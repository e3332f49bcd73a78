"""A wrong program (an access out of bounds, an output not fully written) has no bound in any pipeline that
prices it: the analysis --lift-affine reports (AccessChecks, shared by type) refuses it in --sol and
--print-intensity, in the cost model itself (the API, solar-llm's surfaces) and in solar-bench's bounds,
each time with the place of the first wrong access (issue 36)."""

from __future__ import annotations

import contextlib

import pytest

from solar.backends.cost import CostError, CostModel
from solar.backends.sol_results import SolResults
from solar.bench.bounds import BoundsError, compute_bounds
from solar.ir.analysis.access_checks import AccessChecks
from solar.ir.diagnostics import DiagnosticEngine, DiagnosticError
from solar.ir.parser import parse_module
from solar.ir.pass_manager import PassContext, PassManager
from solar.passes import registry
from solar.targets.loader import load_target

SHIFT = """solar.func @shift(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = solar.kernel @shift(%x as X) -> (Y: tensor<8xf32>) {
    affine.for %i = 0 to 8 {
      Y[%i] = X[%i + SHIFT]
    }
  }
  solar.return %y
}
"""
OUT_OF_BOUNDS = "access `X[%i + 1]` is out of bounds: at %i = 7 it touches X[8] but X has shape 8"
HOLES = SHIFT.replace("0 to 8 {", "0 to 8 step 2 {").replace(" + SHIFT", "")


def _run(pipeline: str, text: str) -> tuple[PassContext, list[str]]:
    engine = DiagnosticEngine()
    module = parse_module(text, "w.sir", engine)
    ctx = PassContext(engine, lambda text: None)
    with contextlib.suppress(DiagnosticError):  # the pass manager stops after a pass with errors
        PassManager(registry.parse_pipeline(pipeline)).run(module, ctx)
    return ctx, [f"{d.loc.line}:{d.loc.col}: {d.message}" for d in engine.diagnostics if d.severity == "error"]


def test_lift_affine_and_sol_report_the_same_problem_at_the_same_place() -> None:
    wrong = SHIFT.replace("SHIFT", "1")
    _, lifted = _run("lift-affine", wrong)
    _, priced = _run("sol{target=h100}", wrong)
    _, intensity = _run("lift-einsum,print-intensity", wrong)
    assert lifted == [f"4:15: {OUT_OF_BOUNDS}"]
    assert priced == [f"4:15: sol: {OUT_OF_BOUNDS} (a wrong program has no bound)"]
    assert intensity == [f"4:15: print-intensity: {OUT_OF_BOUNDS} (a wrong program has no bound)"]
    _, holes = _run("sol{target=h100}", HOLES)
    assert holes == ["2:41: sol: output Y is not fully written: Y[1] is never assigned (a wrong program has no bound)"]


def test_the_check_is_one_analysis_shared_by_lift_affine_and_sol() -> None:
    ctx, errors = _run("lift-affine,sol{target=h100}", SHIFT.replace("SHIFT", "0"))
    assert errors == []
    assert ctx.analyses.computed.count(AccessChecks) == 1
    assert ctx.analyses.computed.count(CostModel) == 1
    assert ctx.results[SolResults].reports[0].modes["fused"].bytes == 64  # an 8-element copy: 32 B in, 32 B out


def test_the_cost_model_and_solar_bench_refuse_it_with_its_place() -> None:
    module = parse_module(SHIFT.replace("SHIFT", "1"), "w.sir")
    with pytest.raises(CostError, match=f"^{OUT_OF_BOUNDS.replace('[', '.').replace('+', '.')}") as err:
        CostModel(module)
    assert (err.value.loc.file, err.value.loc.line, err.value.loc.col) == ("w.sir", 4, 15)
    with pytest.raises(BoundsError) as bounds_err:
        compute_bounds(module, [load_target("h100")], {})
    assert str(bounds_err.value).startswith(f"w.sir:4:15: {OUT_OF_BOUNDS}")
    assert CostModel(parse_module(SHIFT.replace("SHIFT", "0"), "w.sir")).whole_graph().total_bytes == 64


# A fixed-size buffer read up to a size parameter (a class-weight vector of 5 read over C classes, as
# translated cross-entropy has it): right at the module's own C = 5, wrong only past it.
WEIGHTED = """solar.module @weighted [C = CLASSES] {
  solar.func @main(%x: tensor<Cxf32>, %w: tensor<5xf32>) -> tensor<f32> {
    %y = solar.kernel @dot(%x as X, %w as W) -> (Y: tensor<f32>) {
      affine.for %c = 0 to C {
        Y[] += X[%c] * W[%c]
      }
    }
    solar.return %y
  }
}
"""


def _diagnostics(pipeline: str, text: str) -> list[tuple[str, str]]:
    engine = DiagnosticEngine()
    module = parse_module(text, "w.sir", engine)
    ctx = PassContext(engine, lambda text: None)
    with contextlib.suppress(DiagnosticError):
        PassManager(registry.parse_pipeline(pipeline)).run(module, ctx)
    return [(d.severity, d.message) for d in engine.diagnostics]


def test_a_problem_only_at_other_sizes_is_a_remark_and_the_program_is_priced() -> None:
    said = _diagnostics("sol{target=h100}", WEIGHTED.replace("CLASSES", "5"))
    assert not [m for s, m in said if s == "error"]
    remarks = [m for s, m in said if s == "remark" and "out of bounds" in m]
    assert len(remarks) == 1 and "not at the sizes priced" in remarks[0] and "C = 6" in remarks[0]
    module = parse_module(WEIGHTED.replace("CLASSES", "5"), "w.sir", DiagnosticEngine())
    assert CostModel(module).whole_graph().total_bytes == 5 * 4 + 5 * 4 + 4


def test_the_same_program_at_a_size_past_its_buffer_is_refused() -> None:
    said = _diagnostics("sol{target=h100}", WEIGHTED.replace("CLASSES", "6"))
    errors = [m for s, m in said if s == "error"]
    assert errors == ["sol: access `W[%c]` is out of bounds: at %c = 5 (with C = 6) it touches W[5] but W has shape 5 "
                      "(a wrong program has no bound)"]
