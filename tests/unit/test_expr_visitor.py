"""The one dispatch over expression classes (solar.ir.expr_visitor): every class has its case, an
interpreter defines only its own, and the interpreters built on it (typing, ISL text, operation counts)
keep their answers."""

from __future__ import annotations

from collections import Counter

import pytest

from solar.ir import expr as expr_module
from solar.ir.analysis.counts import expression_ops
from solar.ir.analysis.isl_model import UnsupportedForISL, isl_expr
from solar.ir.dtypes import DType
from solar.ir.expr import Access, Binary, Call, Cast, Expr, FloatLit, IndexRef, IntLit, NameRef
from solar.ir.expr_visitor import CASES, ExprVisitor


def test_every_expression_class_has_a_case() -> None:
    classes = {c for c in vars(expr_module).values()
               if isinstance(c, type) and issubclass(c, Expr) and c is not Expr}
    assert classes == set(CASES)


class Depth(ExprVisitor[int]):
    def visit_binary(self, e: Binary) -> int:
        return 1 + max(self.visit(e.lhs), self.visit(e.rhs))

    def visit_int_lit(self, e: IntLit) -> int:
        return 0


def test_an_interpreter_keeps_only_its_cases() -> None:
    e = Binary("+", IntLit(1), Binary("*", IntLit(2), IntLit(3)))
    assert Depth().visit(e) == 2
    with pytest.raises(TypeError, match="Depth has no case for FloatLit"):
        Depth().visit(Binary("+", IntLit(1), FloatLit(2.0)))


def test_a_subclass_of_an_expression_class_takes_its_base_case() -> None:
    class Seven(IntLit):
        pass

    assert Depth().visit(Binary("+", Seven(7), IntLit(1))) == 1


def test_the_interpreters_on_it() -> None:
    x = Access("X", (Binary("+", Binary("*", IntLit(2), IndexRef("p")), IndexRef("r")),))
    value = Call("exp", (Binary("*", Cast(DType.F32, x), NameRef("s")),))
    assert expression_ops(value) == Counter({"exp": 1, "mul": 1, "cast": 1})  # the subscript is free
    names = {"%p": "p", "%r": "r", "N": "n"}
    assert isl_expr(Binary("floordiv", Binary("+", IndexRef("p"), NameRef("N")), IntLit(2)), names) == \
        "floor(((p + n))/2)"
    with pytest.raises(UnsupportedForISL, match="is not affine"):
        isl_expr(value, names)
