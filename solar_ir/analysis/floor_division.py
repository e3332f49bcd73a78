"""Nested floor divisions merged into one, before an expression becomes ISL text.

A size through a chain of strided layers nests floor divisions: DenseNet's last feature maps are
`1 + (-1 + (-1 + (-1 + (-1 + X) floordiv 4) floordiv 2) floordiv 2) floordiv 2`. ISL gives each floor an
existentially quantified variable, and every set, map and count over such a size carries them all: parsing
and operating on them dominated the pricing of a whole DenseNet. For integers y, z and positive integers a, b

    floor((floor(y / a) + z) / b) = floor((y + a·z) / (a·b))

(write y = a·q + r with 0 ≤ r < a and q + z = b·s + t with 0 ≤ t < b: then y + a·z = a·b·s + (a·t + r) with
0 ≤ a·t + r ≤ a·b - 1, so both sides are s). The chain above becomes `1 + (-29 + X) floordiv 32`: one floor.
The value is the same at every point, so every set, count and bound is too.
"""

from __future__ import annotations

from solar.ir.expr import Binary, Expr, IntLit, Unary
from solar.ir.expr_visitor import ExprVisitor

Terms = list[tuple[int, Expr]]  # a sum: (integer coefficient, term), terms that are literals folded apart


def merge_floor_division(e: Binary) -> Binary:
    """`e` (a `floordiv`) with a floor division among the terms of its dividend merged into it, repeatedly
    (the innermost first); any other expression is returned as it is."""
    divisor = _positive_literal(e.rhs) if e.op == "floordiv" else None
    if divisor is None:
        return e
    terms: Terms = []
    constant = _TERMS.visit(e.lhs, 1, terms)
    inner = next((k for k, (coeff, t) in enumerate(terms)
                  if coeff == 1 and isinstance(t, Binary) and _positive_literal(t.rhs) is not None
                  and t.op == "floordiv"), None)
    if inner is None:
        return e
    merged = merge_floor_division(terms[inner][1])  # type: ignore[arg-type]
    a = _positive_literal(merged.rhs)
    assert a is not None
    dividend: Terms = []
    constant = a * constant + _TERMS.visit(merged.lhs, 1, dividend)
    dividend += [(a * coeff, t) for k, (coeff, t) in enumerate(terms) if k != inner]
    return merge_floor_division(Binary("floordiv", _sum(dividend, constant, e), IntLit(a * divisor), e.loc))


def _positive_literal(e: Expr) -> int | None:
    return e.value if isinstance(e, IntLit) and e.value > 0 else None


def _sum(terms: Terms, constant: int, at: Expr) -> Expr:
    out: Expr | None = None
    for coeff, t in terms:
        part = t if coeff == 1 else Binary("*", IntLit(coeff, at.loc), t, at.loc)
        out = part if out is None else Binary("+", out, part, at.loc)
    if out is None:
        return IntLit(constant, at.loc)
    return out if constant == 0 else Binary("+", IntLit(constant, at.loc), out, at.loc)


class _Terms(ExprVisitor[int]):
    """Adds `scale` times an expression to a list of terms, split at `+`, `-` and negation, and gives its
    integer-literal part."""

    def visit_int_lit(self, e: IntLit, scale: int, terms: Terms) -> int:
        return scale * e.value

    def visit_unary(self, e: Unary, scale: int, terms: Terms) -> int:
        if e.op == "-":
            return self.visit(e.operand, -scale, terms)
        return self.visit_other(e, scale, terms)

    def visit_binary(self, e: Binary, scale: int, terms: Terms) -> int:
        if e.op in ("+", "-"):
            return self.visit(e.lhs, scale, terms) + self.visit(e.rhs, scale if e.op == "+" else -scale, terms)
        return self.visit_other(e, scale, terms)

    def visit_other(self, e: Expr, scale: int, terms: Terms) -> int:
        terms.append((scale, e))
        return 0


_TERMS = _Terms()


def split_floor_bound(bound: Expr) -> tuple[Expr | None, Expr, int] | None:
    """`bound` as `rest + floor(dividend / divisor)` (rest None when there is none), the floor merged, when it
    has that form with a positive literal divisor; else None. For an integer x, `x < rest + floor(y / d)`
    holds exactly when `d·(x - rest + 1) <= y`, a constraint ISL takes without an existential variable: the
    same set, parsed in about half the time (DenseNet's feature-map bounds and padding guards)."""
    if isinstance(bound, Binary) and bound.op == "+":
        for rest, term in ((bound.lhs, bound.rhs), (bound.rhs, bound.lhs)):
            split = _floor(term)
            if split is not None:
                return rest, *split
        return None
    split = _floor(bound)
    return None if split is None else (None, *split)


def _floor(e: Expr) -> tuple[Expr, int] | None:
    if not (isinstance(e, Binary) and e.op == "floordiv"):
        return None
    merged = merge_floor_division(e)
    divisor = _positive_literal(merged.rhs)
    return None if divisor is None else (merged.lhs, divisor)
