"""Structurally identical kernels share one ISL model and its memo (solar.ir.analysis.isl_model.build_model);
each keeps its own statements, so what is reported about it is located at its own lines."""

from __future__ import annotations

from solar.ir.analysis.access_checks import AccessChecks
from solar.ir.analysis.counts import kernel_counts
from solar.ir.analysis.isl_model import build_model
from solar.ir.ops import KernelOp, ModuleOp
from solar.ir.parser import parse_module

KERNEL = """  %{name} = solar.kernel @{name}(%x as X) -> (Y: tensor<8xf32>) {{
    affine.for %i = 0 to 8 {{
      Y[%i] = X[%i + {shift}] * 2.0
    }}
  }}
"""


def _module(shifts: list[int]) -> ModuleOp:
    kernels = "".join(KERNEL.format(name=f"k{n}", shift=s) for n, s in enumerate(shifts))
    results = ", ".join(f"%k{n}" for n in range(len(shifts)))
    types = ", ".join("tensor<8xf32>" for _ in shifts)
    return parse_module(f"solar.func @f(%x: tensor<9xf32>) -> ({types}) {{\n{kernels}  solar.return {results}\n}}\n",
                        "shared.sir")


def _kernels(shifts: list[int]) -> list[KernelOp]:
    return [op for op in _module(shifts).walk() if isinstance(op, KernelOp)]


def test_identical_kernels_share_the_isl_objects_and_the_memo_but_not_their_statements() -> None:
    a, b, c = _kernels([1, 1, 2])
    ma, mb, mc = (build_model(k, [], {}) for k in (a, b, c))
    assert ma.memo is mb.memo and ma.statements[0].domain is mb.statements[0].domain
    assert mc.memo is not ma.memo  # another shift: another structure
    assert ma.statements[0].stmt is not mb.statements[0].stmt
    assert mb.statements[0].stmt is next(s for s in b.body[0].body)  # type: ignore[attr-defined]
    assert mb.statements[0].reads[0][0] is mb.statements[0].stmt.value.lhs  # type: ignore[attr-defined]
    assert mb.kernel is b
    assert [ma.in_bounds(ma.statements[0], k) for k in (0, 1)] == [True, True]
    assert mc.in_bounds(mc.statements[0], 1) is False  # X[%i + 2] reaches X[9]


def test_counts_are_shared_but_each_caller_gets_its_own_copy() -> None:
    a, b = _kernels([0, 0])
    first = kernel_counts(build_model(a, [], {}), {})
    first.points += 1000  # a caller's own copy: the memo keeps the count
    second = kernel_counts(build_model(b, [], {}), {})
    assert (second.points, second.flops, second.bytes_read, second.bytes_written) == (8, 8, {"X": 32}, 32)


def test_a_problem_of_shared_kernels_is_reported_at_each_ones_own_line() -> None:
    problems = AccessChecks(_module([2, 2])).problems
    assert [(p.loc.line if p.loc else None, p.message) for p in problems] == [
        (line, "access `X[%i + 2]` is out of bounds: at %i = 7 it touches X[9] but X has shape 9")
        for line in (4, 9)]


TWO_STATEMENTS = """solar.module @m [N = 6] {
  solar.func @f(%x: tensor<Nx4xf32>) -> tensor<Nx4xf32> {
    %y = solar.kernel @k(%x as X) -> (Y: tensor<Nx4xf32>) {
      affine.for %i = 0 to N {
        affine.for %j = 0 to 4 {
          Y[%i, %j] = X[%i, %j]
        }
      }
      affine.for %i = 0 to N {
        affine.for %j = 0 to 4 {
          Y[%i, %j] += 1.0
        }
      }
    }
    solar.return %y
  }
}
"""


def test_a_domain_parsed_under_one_name_and_renamed_is_the_domain_parsed_under_its_own() -> None:
    import islpy as isl

    kernel = next(op for op in parse_module(TWO_STATEMENTS, "two.sir").walk() if isinstance(op, KernelOp))
    model = build_model(kernel, ["N"], {})
    assert [s.name for s in model.statements] == ["S0", "S1"]
    for s in model.statements:
        own = isl.Set(f"[N] -> {{ {s.name}[i, j] : i >= 0 and i < N and j >= 0 and j < 4 }}").intersect_params(
            model.context)
        assert s.domain.get_tuple_name() == s.name
        assert str(s.domain) == str(own) and s.domain.is_equal(own)
        assert s.domain.card().eval(isl.Point.zero(s.domain.get_space().params()).set_coordinate_val(
            isl.dim_type.param, 0, isl.Val(6))).to_python() == 24


def test_isl_objects_made_later_are_those_of_the_structure_the_model_was_built_for() -> None:
    # They are made when first asked for; a pass may rewrite the statement in between (mask_domains does).
    from solar.ir.expr import FloatLit

    a, b = _kernels([0, 0])
    ma = build_model(a, [], {})
    stmt = next(s for s in a.body[0].body)  # type: ignore[attr-defined]
    stmt.value = FloatLit(1.0)  # X is no longer read
    mb = build_model(b, [], {})  # b still has a's old structure: it shares a's model
    assert mb.statements[0].isl is ma.statements[0].isl
    assert [str(m) for m in ma.statements[0].isl.reads] == ["{ S0[i] -> X[i] : 0 <= i <= 7 }"]
    assert mb.in_bounds(mb.statements[0], 1)
