"""Facts read off loops and subscripts (subscript_facts, dependences.same_iteration): each True is what ISL
finds too, and the plain cases a network asks about are answered without it."""

from __future__ import annotations

import pytest

from solar.ir.analysis import subscript_facts as facts
from solar.ir.analysis.dependences import always_before, same_iteration, touching
from solar.ir.analysis.isl_model import KernelModel, build_model
from solar.ir.ops import KernelOp
from solar.ir.parser import parse_module

_BODY = """solar.module @m [N = 8] {{
solar.func @f(%x: tensor<Nx16xf32>) -> (tensor<Nx16xf32>) {{
  %y = solar.kernel @k(%x as X) -> (Y: tensor<Nx16xf32>) {{
    local s: tensor<16xf32>
    {body}
  }}
  solar.return %y
}}
}}
"""


def _model(body: str) -> KernelModel:
    kernel = next(op for op in parse_module(_BODY.format(body=body), "k.sir").walk() if isinstance(op, KernelOp))
    return build_model(kernel, ["N"], {})


_CASES = [
    # (body, injective, covers Y, never negative)
    ("affine.for %i = 0 to N { affine.for %j = 0 to 16 { Y[%i, %j] = X[%i, %j] } }", True, True, True),
    ("affine.for %j = 0 to 16 { affine.for %i = 0 to N { Y[%i, %j] = X[%i, %j] } }", True, True, True),
    ("affine.for %i = 0 to N { affine.for %j = 0 to 8 { Y[%i, %j] = X[%i, %j] } }", True, False, True),
    ("affine.for %i = 1 to N { affine.for %j = 0 to 16 { Y[%i, %j] = X[%i, %j] } }", True, False, True),
    ("affine.for %i = 0 to N { affine.for %j = 0 to 16 { affine.if %j < 8 { Y[%i, %j] = X[%i, %j] } } }",
     True, False, True),
    ("affine.for %i = 0 to N { affine.for %j = 0 to 16 { Y[%i, 0] = X[%i, %j] } }", False, False, True),
    ("affine.for %i = 0 to N { affine.for %j = 0 to 8 { Y[%i, 2 * %j] = X[%i, %j] } }", False, False, True),
    ("affine.for %i = -1 to N - 1 { affine.for %j = 0 to 16 { Y[%i + 1, %j] = X[%i + 1, %j] } }",
     False, False, False),
]


@pytest.mark.parametrize(("body", "injective", "covers", "never_negative"), _CASES)
def test_facts_hold_where_isl_finds_them(body: str, injective: bool, covers: bool, never_negative: bool) -> None:
    model = _model(body)
    s = model.statements[0]
    target = s.stmt.target
    assert facts.injective(target, s.loops) is injective
    assert facts.covers(target, s.loops, bool(s.guards), model.tensors["Y"].shape) is covers
    assert facts.never_negative(s.loops) is never_negative
    # Never claimed where ISL disagrees.
    assert not injective or s.write.is_injective()
    assert not covers or model.boxes["Y"].is_subset(s.write.range())
    assert not never_negative or all(not s.domain.dim_min_val(k).is_neg() for k in range(len(s.loops)))


@pytest.mark.parametrize(("guard", "in_bounds"), [
    ("%i + %r - 1 >= 0 and %i + %r - 1 < N", True),
    ("%i + %r - 1 < N and 0 <= %i + %r - 1", True),
    ("%i + %r - 1 >= 0 and %i + %r - 1 < N + 1", False),
    ("%i + %r - 1 >= 0", False),
    ("%i + %r >= 0 and %i + %r - 1 < N", False),
])
def test_a_guard_holds_a_subscript_in_bounds(guard: str, in_bounds: bool) -> None:
    model = _model(f"affine.for %i = 0 to N {{ affine.for %r = 0 to 3 {{ affine.if {guard} {{ "
                   "Y[%i, 0] += X[%i + %r - 1, 0] } } }")
    s = model.statements[0]
    read = s.accesses[0]
    assert facts.guarded_in_bounds(read, s.loops, s.guards, model.tensors["X"].shape) is in_bounds
    assert model.in_bounds(s, 1) is in_bounds  # and ISL agrees where the guard does not show it


@pytest.mark.parametrize(("body", "same"), [
    ("affine.for %c = 0 to 16 { affine.for %i = 0 to N { s[%c] += X[%i, %c] }\n"
     "affine.for %i = 0 to N { Y[%i, %c] = X[%i, %c] - s[%c] } }", True),
    ("affine.for %c = 0 to 16 { affine.for %i = 0 to N { s[%c] += X[%i, %c] } }\n"
     "affine.for %c = 0 to 16 { affine.for %i = 0 to N { Y[%i, %c] = X[%i, %c] - s[%c] } }", True),
    ("affine.for %c = 0 to 15 { affine.for %i = 0 to N { s[%c] += X[%i, %c] }\n"
     "affine.for %i = 0 to N { Y[%i, %c] = X[%i, %c] - s[%c + 1] } }", False),
])
def test_reads_in_the_iteration_of_their_write(body: str, same: bool) -> None:
    model = _model(body)
    write, read = model.statements
    access = read.accesses[1]
    assert same_iteration(write, write.stmt.target, read, access) is same
    if same:  # the write runs first at every pair of instances touching one element, as ISL finds
        assert always_before(touching(write.write, read.isl.reads[1]), write, read)
