"""A point of a sweep is `--bind-params` at that point followed by the same passes and `--sol`, for every
program: modules drawn by the SIR generator (sirgen.py), swept and bound at a drawn point, every mode's FLOPs,
bytes and bound kind equal. Lifting decisions that only a bound size allows (a subscript `%i - M`) must not
change the price: the pinned case is a kernel that zero-fills its result and writes a shifted tail."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sirgen import Limits, modules

from solar.backends.sol_results import SolResults
from solar.backends.sweep_report import SweepOutcome
from solar.ir.diagnostics import DiagnosticEngine, DiagnosticError
from solar.ir.ops import ModuleOp
from solar.ir.parser import parse_module
from solar.ir.pass_manager import PassContext, PassManager
from solar.passes.bind_params import BindParams
from solar.passes.fuse import Fuse
from solar.passes.lift_einsum import LiftEinsum
from solar.passes.sol import SOL

Figures = dict[str, tuple[int, int, str]]  # mode -> (FLOPs, bytes, bound)


def _run(module: ModuleOp, passes: list) -> PassContext | None:
    ctx = PassContext(DiagnosticEngine(), report=lambda _: None)
    try:
        PassManager(passes).run(module, ctx)
    except DiagnosticError:
        return None
    return ctx


def swept(module: ModuleOp, point: dict[str, int]) -> Figures | None:
    sweep = ";".join(f"{k}={v}" for k, v in point.items())
    ctx = _run(copy.deepcopy(module), [LiftEinsum(), Fuse(), SOL(target="h100", sweep=sweep, annotate=False)])
    if ctx is None:
        return None
    return {c.mode: (c.flops, c.bytes, c.bound) for c in ctx.results[SweepOutcome].sweep.costs()}


def bound(module: ModuleOp, point: dict[str, int]) -> Figures | None:
    passes = [BindParams(options={k: str(v) for k, v in point.items()}), LiftEinsum(), Fuse(),
              SOL(target="h100", annotate=False)]
    ctx = _run(copy.deepcopy(module), passes)
    if ctx is None:
        return None
    return {mode: (r.flops, r.bytes, r.bound) for mode, r in ctx.results[SolResults].reports[0].modes.items()}


def assert_sweep_is_bind(module: ModuleOp, point: dict[str, int]) -> None:
    a, b = swept(module, point), bound(module, point)
    assume(a is not None and b is not None)
    assert a == b, (point, a, b)


SHIFTED_TAIL = """\
solar.module @shift [N = 16, M = 4] {
  solar.func @shift(%x: tensor<Nxf32>) -> tensor<Nxf32> {
    %y = solar.kernel @shift(%x as X) -> (Y: tensor<Nxf32>) {
      affine.for %i = 0 to N {
        Y[%i] = 0.0
      }
      affine.for %i = M to N {
        Y[%i] = exp(X[%i - M])
      }
    }
    solar.return %y
  }
}
"""


@pytest.mark.parametrize("n, m, nbytes", [(3, 5, 12), (16, 4, 4 * 12 + 4 * 16), (8, 1, 4 * 7 + 4 * 8)])
def test_zero_fill_then_shifted_tail(n: int, m: int, nbytes: int) -> None:
    """Bound, the kernel lifts (M is a number in the subscript) and its fill is dropped; swept, it stays a
    loop nest. Either way Y is written whole: N=3 M=5 writes 12 bytes of zeros and reads nothing."""
    module = parse_module(SHIFTED_TAIL, "shift.sir", DiagnosticEngine())
    point = {"N": n, "M": m}
    a, b = swept(module, point), bound(module, point)
    assert a == b
    assert b is not None and b["fused"][1] == nbytes and b["fused"][0] == max(0, n - m)


GATHER_OF_SYMBOLIC_ROWS = """\
solar.module @rows [M = 2547] {
  solar.func @main(%x: tensor<(M + 1)xi32>) -> tensor<(M + 1)x4xi32> {
    %c = solar.constant 10 : tensor<Mx4xi32>
    %g = solar.gather %c, %x {axis = 0} : tensor<(M + 1)x4xi32>
    solar.return %g
  }
}
"""


@pytest.mark.parametrize("m", [1, 6, 100])
def test_gather_of_symbolic_rows(m: int) -> None:
    """Ids that are data may all name one row, whether the table's row count is a number (bound) or a
    symbol (swept): M + 1 i32 ids, one 16-byte row, the (M + 1) x 4 i32 result. Swept, the row count once
    was not a number, and the whole table was priced."""
    module = parse_module(GATHER_OF_SYMBOLIC_ROWS, "rows.sir", DiagnosticEngine())
    a, b = swept(module, {"M": m}), bound(module, {"M": m})
    assert a == b
    assert b is not None and b["unfused"][1] == 4 * (m + 1) + 16 + 16 * (m + 1)


# A full run (pytest -n 2) has drawn modules a lone run of this file does not, and one of them showed a real
# difference (the gather above). A failure here is a sweep that disagrees with --bind-params: never mark it
# expected, pin the module and fix the pricing.
@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                                 HealthCheck.large_base_example])
@given(modules(Limits(max_ops=4, max_depth=1, max_expr_depth=2)), st.data())
def test_sweep_point_equals_bind_params_then_sol(module: ModuleOp, data: st.DataObject) -> None:
    assume(module.params)
    point = {p.name: data.draw(st.integers(1, 9), label=p.name) for p in module.params}
    assert_sweep_is_bind(module, point)


EMPTY_LOCAL = """\
solar.module @empty [M = 2] {
  solar.func @main(%x: tensor<Mxf32>) -> tensor<Mxf32> {
    %y = solar.kernel @k(%x as X) -> (Y: tensor<Mxf32>) {
      local acc: tensor<(M - 1)xf32>
      affine.for %i = 0 to M {
        Y[%i] = 0.0
      }
      affine.for %i = 0 to M {
        Y[%i] = exp(X[%i])
      }
    }
    solar.return %y
  }
}
"""


@pytest.mark.parametrize("m", [1, 2, 5])
def test_an_empty_local_keeps_the_counts(m: int) -> None:
    """A local of M - 1 rows is empty at M = 1, a legal size: the kernel still reads and writes M floats.
    The symbolic counts once assumed every dimension at least 1 and gave 0 there."""
    module = parse_module(EMPTY_LOCAL, "empty.sir", DiagnosticEngine())
    a, b = swept(module, {"M": m}), bound(module, {"M": m})
    assert a == b
    assert b is not None and b["unfused"][1] == 8 * m
