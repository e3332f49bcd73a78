"""Facts about a statement's accesses read off its loops and subscripts, where they show them plainly.

Each function answers True only when the IR proves the fact for every value of the size parameters; False
means "not shown here", and the caller asks ISL (isl_model). A network asks these questions thousands of
times, nearly always of loops from 0 to a size with each index alone in a subscript.
"""

from __future__ import annotations

from solar.ir.expr import Access, Binary, Call, Expr, IndexRef, IntLit
from solar.ir.ops import AffineFor
from solar.ir.types import Dim, canonical_dim, dims_equal


def _parts(bound: Expr, combiner: str) -> tuple[Expr, ...]:
    return bound.args if isinstance(bound, Call) and bound.func == combiner else (bound,)


def never_negative(loops: list[AffineFor]) -> bool:
    """Whether no loop index takes a negative value: each loop starts at a number of at least 0 (or at the
    largest of bounds one of which is such a number)."""
    return all(any(isinstance(lo, IntLit) and lo.value >= 0 for lo in _parts(loop.lower, "max")) for loop in loops)


def _distinct(loops: list[AffineFor]) -> bool:
    return len({loop.var for loop in loops}) == len(loops)


def injective(target: Access, loops: list[AffineFor]) -> bool:
    """Whether distinct iterations write distinct elements: every loop index stands alone in a subscript."""
    alone = {e.name for e in target.indices if isinstance(e, IndexRef)}
    return _distinct(loops) and all(loop.var in alone for loop in loops)


def covers(target: Access, loops: list[AffineFor], guarded: bool, shape: tuple[Dim, ...]) -> bool:
    """Whether the statement writes every element of a tensor of `shape`: no guard, every loop from 0 to the
    size of the one dimension its index stands alone in (step 1), and the other subscripts 0 in a dimension
    of 1."""
    if guarded or not _distinct(loops):
        return False
    by_var = {loop.var: loop for loop in loops}
    used: set[str] = set()
    for index, dim in zip(target.indices, shape, strict=True):
        if isinstance(index, IntLit) and index.value == 0 and dim == 1:
            continue
        loop = by_var.get(index.name) if isinstance(index, IndexRef) else None
        if loop is None or loop.var in used or loop.step != 1:
            return False
        used.add(loop.var)
        if not (isinstance(loop.lower, IntLit) and loop.lower.value == 0):
            return False
        if isinstance(loop.upper, Call) or not dims_equal(canonical_dim(loop.upper), dim):
            return False
    return used == set(by_var)


def guarded_in_bounds(access: Access, loops: list[AffineFor], guards: list[Expr], shape: tuple[Dim, ...]) -> bool:
    """Whether every subscript of `access` stays inside its dimension: a number inside it, a loop index from
    0 (or more) to at most its size, or an expression the enclosing guards hold to `0 <= e` and `e < size`
    (a padded convolution's `X[%p + %r - 1]` under `affine.if %p + %r - 1 >= 0 and %p + %r - 1 < H`)."""
    if not _distinct(loops):
        return False  # an inner loop of the same name as an outer one: which one a guard means is not plain
    by_var = {loop.var: loop for loop in loops}
    conjuncts = [c for g in guards for c in _conjuncts(g)]
    for index, dim in zip(access.indices, shape, strict=True):
        if isinstance(index, IntLit) and isinstance(dim, int) and 0 <= index.value < dim:
            continue
        loop = by_var.get(index.name) if isinstance(index, IndexRef) else None
        if loop is not None and never_negative([loop]) and any(at_most(hi, dim) for hi in _parts(loop.upper, "min")):
            continue
        if not (any(_at_least_zero(c, index) for c in conjuncts) and any(_below(c, index, dim) for c in conjuncts)):
            return False
    return True


def _conjuncts(cond: Expr) -> list[Expr]:
    if isinstance(cond, Binary) and cond.op == "and":
        return _conjuncts(cond.lhs) + _conjuncts(cond.rhs)
    return [cond]


def _bound_on(cond: Expr, e: Expr, op: str, mirrored: str) -> Expr | None:
    """b in `e op b` or `b mirrored e` (`e >= b` / `b <= e`); None when `cond` is neither."""
    if not isinstance(cond, Binary):
        return None
    if cond.op == op and cond.lhs == e:
        return cond.rhs
    if cond.op == mirrored and cond.rhs == e:
        return cond.lhs
    return None


def _at_least_zero(cond: Expr, e: Expr) -> bool:
    """`e >= n` or `n <= e` for a number n >= 0."""
    bound = _bound_on(cond, e, ">=", "<=")
    return isinstance(bound, IntLit) and bound.value >= 0


def _below(cond: Expr, e: Expr, dim: Dim) -> bool:
    """`e < b` or `b > e` for a bound b at most `dim`."""
    bound = _bound_on(cond, e, "<", ">")
    return bound is not None and at_most(bound, dim)


def at_most(bound: Expr, dim: Dim) -> bool:
    """Whether `bound` is certainly at most `dim`: the same size, or both numbers."""
    if bound == dim:
        return True  # the same expression (the common case), without its canonical form
    size = canonical_dim(bound)
    if isinstance(size, int) and isinstance(dim, int):
        return size <= dim
    return dims_equal(size, dim)
