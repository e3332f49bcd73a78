"""Nested floor divisions merged before ISL (solar.ir.analysis.floor_division): the same value everywhere,
and the same ISL set."""

from __future__ import annotations

import islpy as isl
from hypothesis import given
from hypothesis import strategies as st

from solar.ir.analysis.floor_division import merge_floor_division, split_floor_bound
from solar.ir.analysis.isl_model import below, isl_expr, within
from solar.ir.expr import Binary, Expr, IntLit, NameRef, Unary, walk
from solar.ir.expr_values import evaluate_int
from solar.ir.expr_visitor import ExprVisitor
from solar.ir.parser import parse_expr_text

NAMES = ("N", "M")


def _exprs() -> st.SearchStrategy[Expr]:
    """Integer expressions of N and M with floor divisions by positive literals nested in sums, differences,
    negations and products by literals."""
    leaves = st.one_of(st.sampled_from([NameRef(n) for n in NAMES]), st.integers(-9, 9).map(IntLit))

    def extend(inner: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
        return st.one_of(
            st.builds(lambda a, b: Binary("+", a, b), inner, inner),
            st.builds(lambda a, b: Binary("-", a, b), inner, inner),
            st.builds(lambda a: Unary("-", a), inner),
            st.builds(lambda k, a: Binary("*", IntLit(k), a), st.integers(-4, 4), inner),
            st.builds(lambda a, d: Binary("floordiv", a, IntLit(d)), inner, st.integers(1, 7)),
        )

    return st.recursive(leaves, extend, max_leaves=8)


def _floors(e: Expr) -> int:
    return sum(1 for n in walk(e) if isinstance(n, Binary) and n.op == "floordiv")


@given(_exprs(), st.integers(1, 7), st.integers(-60, 60), st.integers(-60, 60))
def test_merged_equals_the_nest_at_every_point(dividend: Expr, divisor: int, n: int, m: int) -> None:
    e = Binary("floordiv", dividend, IntLit(divisor))
    merged = merge_floor_division(e)
    env = {"N": n, "M": m}
    assert evaluate_int(merged, env) == evaluate_int(e, env)
    assert _floors(merged) <= _floors(e)


def test_a_strided_chain_is_one_floor() -> None:
    # DenseNet-201's last feature maps: four strided layers after the stem.
    e = parse_expr_text("(-1 + (-1 + (-1 + (-1 + X) floordiv 4) floordiv 2) floordiv 2) floordiv 2")
    assert isinstance(e, Binary)
    merged = merge_floor_division(e)
    assert _floors(merged) == 1
    assert isl_expr(e, {}) == "floor(((-29 + X))/32)"
    for x in range(-70, 70):
        assert evaluate_int(merged, {"X": x}) == evaluate_int(e, {"X": x}) == (x - 29) // 32


def test_what_does_not_merge_stays() -> None:
    for text in ("N floordiv 3", "(M - N floordiv 3) floordiv 2", "(2 * (N floordiv 3)) floordiv 5", "N mod 4"):
        e = parse_expr_text(text)
        assert isinstance(e, Binary)
        assert merge_floor_division(e) is e


class _NestText(ExprVisitor[str]):
    """ISL text with every floor division kept as written: the model's text before merging."""

    def visit_int_lit(self, e: IntLit) -> str:
        return str(e.value)

    def visit_name_ref(self, e: NameRef) -> str:
        return e.name

    def visit_unary(self, e: Unary) -> str:
        return f"(-{self.visit(e.operand)})"

    def visit_binary(self, e: Binary) -> str:
        a, b = self.visit(e.lhs), self.visit(e.rhs)
        return f"floor(({a})/{b})" if e.op == "floordiv" else f"({a} {e.op} {b})"


@given(_exprs(), st.integers(1, 5))
def test_isl_sets_are_equal(dividend: Expr, divisor: int) -> None:
    """The ISL set bounded by the merged floor is the one bounded by the nest."""
    e = Binary("floordiv", dividend, IntLit(divisor))
    space = "[N, M] -> { [i] : -40 <= N <= 40 and -40 <= M <= 40 and 0 <= i < "
    nested = isl.Set(space + _NestText().visit(e) + " }")
    merged = isl.Set(space + isl_expr(e, {n: n for n in NAMES}) + " }")
    assert merged.is_equal(nested)


def _plain(e: Expr) -> str:
    """ISL text of `e` with every floor written as a floor (the slow path the bounds avoid)."""
    if isinstance(e, Binary) and e.op == "floordiv":
        return f"floor(({_plain(e.lhs)})/{_plain(e.rhs)})"
    if isinstance(e, Binary):
        return f"({_plain(e.lhs)} {e.op} {_plain(e.rhs)})"
    if isinstance(e, Unary):
        return f"(-{_plain(e.operand)})"
    return isl_expr(e, {})


@given(_exprs(), _exprs(), st.integers(1, 7), st.sampled_from(["<", "<=", ">", ">="]))
def test_a_floor_bound_without_its_floor_is_the_same_set(rest: Expr, dividend: Expr, divisor: int, op: str) -> None:
    # `i op rest + floor(y/d)` (the bound on the side a loop's upper bound is) written as `d·(...) <= y`.
    bound = Binary("+", rest, Binary("floordiv", dividend, IntLit(divisor)))
    i = NameRef("i")
    cmp = Binary(op, i, bound) if op in ("<", "<=") else Binary(op, bound, i)
    assert split_floor_bound(bound) is not None
    fast = isl_expr(cmp, {"i": "i"})
    slow = f"{_plain(cmp.lhs)} {op} {_plain(cmp.rhs)}"
    assert fast.count("floor") < slow.count("floor")  # the bound's own floor is gone
    assert isl.Set(f"[N, M] -> {{ [i] : {fast} }}").is_equal(isl.Set(f"[N, M] -> {{ [i] : {slow} }}"))


@given(_exprs(), st.integers(1, 7), st.booleans())
def test_below_a_lone_floor_is_the_same_set(dividend: Expr, divisor: int, strict: bool) -> None:
    bound = Binary("floordiv", dividend, IntLit(divisor))
    fast = below("i", bound, {}, strict=strict)
    slow = f"i {'<' if strict else '<='} {_plain(bound)}"
    assert fast.count("floor") < slow.count("floor")  # the bound's own floor is gone
    assert isl.Set(f"[N, M] -> {{ [i] : {fast} }}").is_equal(isl.Set(f"[N, M] -> {{ [i] : {slow} }}"))


def test_a_bound_without_a_floor_is_written_as_it_was() -> None:
    assert split_floor_bound(parse_expr_text("N + 1")) is None
    assert below("i", parse_expr_text("N + 1"), {}) == "i < (N + 1)"
    assert within("d0", 7, {}) == "d0 < 7"
    assert within("d0", parse_expr_text("1 + (N - 1) floordiv 4"), {}) == "d0 and 4 * ((d0) - (1) + 1) <= (N - 1)"
