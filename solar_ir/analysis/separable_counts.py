"""Counts of a kernel that stays a loop nest, at fixed sizes, without ISL where its loops come apart.

A statement's loops fall into groups that share no bound and no guard (a padded convolution's: the batch,
the output channels, the input channels, each row with its filter row, each column with its filter
column). Its points are the product of the groups' points, and the elements an access touches the product,
over the groups, of the distinct subscript values each group gives the dimensions that depend on it alone.
A group of one loop without a guard is counted from its bounds; a larger one is enumerated, up to a limit.
Anything else (an index shared by two groups' subscripts, a tensor touched by two accesses, a large group)
is left to ISL: each question here answers None then. The numbers are the same ISL's barvinok gives.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from solar.ir.analysis.isl_model import KernelModel, StatementModel
from solar.ir.expr import Access, Binary, Call, Expr, IndexRef, IntLit, Unary, linear_form, walk
from solar.ir.expr_values import evaluate_int
from solar.ir.expr_visitor import ExprVisitor
from solar.ir.ops import AffineFor

ENUMERATION_LIMIT = 1 << 15  # iterations a group may take to enumerate; beyond it ISL counts
_COMPARE = {"<": int.__lt__, "<=": int.__le__, ">": int.__gt__, ">=": int.__ge__, "==": int.__eq__}


class _NotSeparable(Exception):
    pass


class _AtSizes:
    """An integer expression at the fixed sizes: its terms in loop indices and a constant, or itself
    (sizes folded to numbers) when it is not affine in them."""

    def __init__(self, expr: Expr, values: dict[str, int]) -> None:
        self.expr = _fold(expr, values)
        form = linear_form(self.expr)
        self.affine = form is not None
        if form is not None:
            self.terms = [(name[1:], coef) for name, coef in form[0]]
            self.const = form[1]

    def at(self, env: dict[str, int]) -> int:
        if self.affine:
            return self.const + sum(coef * env[var] for var, coef in self.terms)
        return evaluate_int(self.expr, {"%" + k: v for k, v in env.items()})


def _fold(expr: Expr, values: dict[str, int]) -> Expr:
    """`expr` with each part free of loop indices evaluated at the sizes."""
    return _FOLD.visit(expr, values)


class _Fold(ExprVisitor[Expr]):
    def visit(self, e: Expr, values: dict[str, int]) -> Expr:  # type: ignore[override]
        if not any(isinstance(n, IndexRef) for n in walk(e)):
            try:
                return IntLit(evaluate_int(e, values))
            except (KeyError, ValueError) as err:
                raise _NotSeparable from err
        return super().visit(e, values)

    def visit_index_ref(self, e: IndexRef, values: dict[str, int]) -> Expr:
        return e

    def visit_binary(self, e: Binary, values: dict[str, int]) -> Expr:
        if e.op in ("floordiv", "ceildiv", "mod") and not (isinstance(e.rhs, IntLit) and e.rhs.value > 0):
            raise _NotSeparable
        return Binary(e.op, self.visit(e.lhs, values), self.visit(e.rhs, values))

    def visit_unary(self, e: Unary, values: dict[str, int]) -> Expr:
        if e.op != "-":
            raise _NotSeparable
        return Unary("-", self.visit(e.operand, values))

    def visit_call(self, e: Call, values: dict[str, int]) -> Expr:
        if e.func not in ("max", "min"):
            raise _NotSeparable
        return Call(e.func, tuple(self.visit(a, values) for a in e.args))

    def visit_other(self, e: Expr, values: dict[str, int]) -> Expr:  # type: ignore[override]
        raise _NotSeparable


_FOLD = _Fold()


def _conjuncts(cond: Expr) -> list[Expr]:
    if isinstance(cond, Binary) and cond.op == "and":
        return _conjuncts(cond.lhs) + _conjuncts(cond.rhs)
    if not (isinstance(cond, Binary) and cond.op in _COMPARE):
        raise _NotSeparable
    return [cond]


def _indices(expr: Expr) -> set[str]:
    return {n.name for n in walk(expr) if isinstance(n, IndexRef)}


class _Group:
    """Loops of one statement that share bounds or guards, with the guards on them."""

    def __init__(self, loops: list[AffineFor], guards: list[Expr], values: dict[str, int]) -> None:
        self.loops = loops
        self.vars = [lp.var for lp in loops]
        self.lows = [[_AtSizes(lo, values) for lo in _parts(lp.lower, "max")] for lp in loops]
        self.highs = [[_AtSizes(hi, values) for hi in _parts(lp.upper, "min")] for lp in loops]
        self.guards = [(_AtSizes(g.lhs, values), _COMPARE[g.op], _AtSizes(g.rhs, values)) for g in guards]
        self._points: list[dict[str, int]] | None = None
        self.budget = ENUMERATION_LIMIT
        self._count: int | None = None
        self._distinct: dict[tuple[Expr, ...], int] = {}

    def count(self) -> int:
        if self._count is None:
            self._count = self._count_points()
        return self._count

    def _count_points(self) -> int:
        if len(self.loops) == 1 and not self.guards:
            lo = max(b.at({}) for b in self.lows[0])
            hi = min(b.at({}) for b in self.highs[0])
            return max(0, -((lo - hi) // self.loops[0].step))
        return len(self.points())

    def distinct(self, indices: tuple[Expr, ...], values: dict[str, int]) -> int:
        """How many distinct tuples the subscripts `indices` take over the group's points."""
        if indices not in self._distinct:
            self._distinct[indices] = self._count_distinct([_AtSizes(e, values) for e in indices])
        return self._distinct[indices]

    def _count_distinct(self, subscripts: list[_AtSizes]) -> int:
        if (len(self.loops) == 1 and not self.guards and len(subscripts) == 1 and subscripts[0].affine
                and any(coef != 0 for _, coef in subscripts[0].terms)):
            return self.count()  # a * i + b takes as many values as i
        return len({tuple(s.at(p) for s in subscripts) for p in self.points()})

    def points(self) -> list[dict[str, int]]:
        if self._points is None:
            if self.budget < ENUMERATION_LIMIT:
                raise _NotSeparable  # enumerated before, past the limit
            self._points = list(self._enumerate(0, {}))
        return self._points

    def _enumerate(self, k: int, env: dict[str, int]) -> Iterator[dict[str, int]]:
        if k == len(self.loops):
            if all(compare(a.at(env), b.at(env)) for a, compare, b in self.guards):
                yield dict(env)
            return
        lo = max(b.at(env) for b in self.lows[k])
        hi = min(b.at(env) for b in self.highs[k])
        for v in range(lo, hi, self.loops[k].step):
            self.budget -= 1
            if self.budget < 0:
                raise _NotSeparable
            env[self.vars[k]] = v
            yield from self._enumerate(k + 1, env)
        env.pop(self.vars[k], None)


_GROUPS: dict[tuple[object, ...], _Group] = {}  # by loops, guards and sizes; see SeparableCounts._split


def _parts(bound: Expr, combiner: str) -> tuple[Expr, ...]:
    return bound.args if isinstance(bound, Call) and bound.func == combiner else (bound,)


class SeparableCounts:
    """Points and footprints of a kernel's statements at fixed sizes (`values`), each None where ISL must
    count it."""

    def __init__(self, model: KernelModel, values: dict[str, int]) -> None:
        self.model = model
        self.values = values
        self.sizes = tuple(sorted(values.items()))
        self.groups: dict[str, list[_Group] | None] = {}
        # The model's context (sizes at least 1, dimensions at least 0) must hold, or ISL counts nothing.
        try:
            self.holds = (all(values[p] >= 1 for p in model.names if not p.startswith("%"))
                          and all(d >= 0 if isinstance(d, int) else evaluate_int(d, values) >= 0
                                  for t in model.tensors.values() for d in t.shape))
        except (KeyError, ValueError):
            self.holds = False

    def _groups(self, s: StatementModel) -> list[_Group] | None:
        if s.name not in self.groups:
            try:
                self.groups[s.name] = self._split(s)
            except _NotSeparable:
                self.groups[s.name] = None
        return self.groups[s.name]

    def _split(self, s: StatementModel) -> list[_Group]:
        if not self.holds or len({lp.var for lp in s.loops}) != len(s.loops):
            raise _NotSeparable
        parent = {lp.var: lp.var for lp in s.loops}

        def root(v: str) -> str:
            while parent[v] != v:
                v = parent[v]
            return v

        def join(names: set[str]) -> None:
            if any(n not in parent for n in names):
                raise _NotSeparable  # an index of no enclosing loop (a solar.for's)
            roots = sorted({root(n) for n in names})
            for r in roots[1:]:
                parent[r] = roots[0]

        for lp in s.loops:
            join({lp.var} | _indices(lp.lower) | _indices(lp.upper))
        conjuncts = [c for g in s.guards for c in _conjuncts(g)]
        for c in conjuncts:
            if not _indices(c):
                raise _NotSeparable
            join(_indices(c))
        groups: list[_Group] = []
        for r in dict.fromkeys(root(lp.var) for lp in s.loops):
            members = [lp for lp in s.loops if root(lp.var) == r]
            mine = [c for c in conjuncts if root(next(iter(_indices(c)))) == r]
            # The same group recurs across kernels of other shapes (a convolution's rows at one size).
            key = (tuple((lp.var, lp.lower, lp.upper, lp.step) for lp in members), tuple(mine), self.sizes)
            group = _GROUPS.get(key)
            if group is None:
                group = _GROUPS[key] = _Group(members, mine, self.values)
                if len(_GROUPS) > 4096:
                    _GROUPS.clear()
            groups.append(group)
        return groups

    def points(self, s: StatementModel) -> int | None:
        groups = self._groups(s)
        if groups is None:
            return None
        try:
            return math.prod(g.count() for g in groups)
        except _NotSeparable:
            self.groups[s.name] = None
            return None

    def footprint(self, tensor: str, *, written: bool = False) -> int | None:
        """The elements of `tensor` the kernel reads (or writes), where one access touches it."""
        touching = [(s, a) for s in self.model.statements
                    for a in ([s.stmt.target] if written else s.accesses) if a.tensor == tensor]
        if len(touching) != 1:
            return None
        s, access = touching[0]
        groups = self._groups(s)
        if groups is None:
            return None
        try:
            return self._touched(groups, access)
        except _NotSeparable:
            return None

    def _touched(self, groups: list[_Group], access: Access) -> int:
        if any(g.count() == 0 for g in groups):
            return 0
        by_group: dict[int, list[Expr]] = {}
        every = {v for g in groups for v in g.vars}
        for index in access.indices:
            names = _indices(index)
            if not names <= every:
                raise _NotSeparable
            owners = {k for k, g in enumerate(groups) if names & set(g.vars)}
            if len(owners) > 1:
                raise _NotSeparable
            if owners:
                by_group.setdefault(owners.pop(), []).append(index)
        return math.prod(groups[k].distinct(tuple(subs), self.values) for k, subs in by_group.items())
