"""Small static analyses the code generator needs: value intervals of affine expressions (to prove accesses in
bounds and skip run-time checks), and which tensors a loop reads and writes (for `prange` and for keeping
reductions in registers).

Everything here is conservative: "unknown" (None) is always a safe answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from solar.ir import expr as ex
from solar.ir.expr import COMPARISONS, Expr, constant_value, free_indices, linear_form, walk
from solar.ir.expr_visitor import ExprVisitor
from solar.ir.ops import AffineFor, AffineIf, Assign, KStmt

Interval = tuple[int, int]  # inclusive
Coeffs = tuple[tuple[str, int], ...]


@dataclass
class IntervalEnv:
    """What is known about the integers in scope: a range per loop index ('%i') and per affine combination
    that an enclosing `affine.if` constrains (keyed by its coefficients, constant excluded)."""

    vars: dict[str, Interval | None] = field(default_factory=dict)
    facts: dict[Coeffs, Interval] = field(default_factory=dict)
    params: dict[str, int] = field(default_factory=dict)

    def child(self) -> IntervalEnv:
        return IntervalEnv(dict(self.vars), dict(self.facts), self.params)


def interval(expr: Expr, env: IntervalEnv) -> Interval | None:
    """The least and greatest value `expr` can take, or None when unknown."""
    result = _INTERVAL.visit(expr, env)
    form = linear_form(expr)
    if form is not None and form[0]:
        fact = env.facts.get(form[0])
        if fact is not None:
            refined = (fact[0] + form[1], fact[1] + form[1])
            result = refined if result is None else (max(result[0], refined[0]), min(result[1], refined[1]))
    return result


class _Interval(ExprVisitor[Interval | None]):
    """The interval of one node from those of its operands (each through `interval`, which also applies
    the facts of enclosing guards); None when unknown."""

    def visit_int_lit(self, e: ex.IntLit, env: IntervalEnv) -> Interval | None:
        return e.value, e.value

    def visit_index_ref(self, e: ex.IndexRef, env: IntervalEnv) -> Interval | None:
        return env.vars.get("%" + e.name)

    def visit_name_ref(self, e: ex.NameRef, env: IntervalEnv) -> Interval | None:
        value = env.params.get(e.name)
        return None if value is None else (value, value)

    def visit_unary(self, e: ex.Unary, env: IntervalEnv) -> Interval | None:
        if e.op != "-":
            return None
        inner = interval(e.operand, env)
        return None if inner is None else (-inner[1], -inner[0])

    def visit_call(self, e: ex.Call, env: IntervalEnv) -> Interval | None:
        if e.func not in ("max", "min") or not e.args:
            return None
        parts = [interval(a, env) for a in e.args]
        if any(p is None for p in parts):
            return None
        los = [p[0] for p in parts if p is not None]
        his = [p[1] for p in parts if p is not None]
        return (max(los), max(his)) if e.func == "max" else (min(los), min(his))

    def visit_binary(self, e: ex.Binary, env: IntervalEnv) -> Interval | None:
        if e.op in ("+", "-"):
            a, b = interval(e.lhs, env), interval(e.rhs, env)
            if a is None or b is None:
                return None
            return (a[0] + b[0], a[1] + b[1]) if e.op == "+" else (a[0] - b[1], a[1] - b[0])
        if e.op == "*":
            c = constant_value(e.lhs)
            other = e.rhs
            if c is None:
                c, other = constant_value(e.rhs), e.lhs
            if c is None:
                return None
            inner = interval(other, env)
            if inner is None:
                return None
            return (c * inner[0], c * inner[1]) if c >= 0 else (c * inner[1], c * inner[0])
        if e.op in ("floordiv", "ceildiv", "mod"):
            c = constant_value(e.rhs)
            inner = interval(e.lhs, env)
            if c is None or c <= 0 or inner is None:
                return None
            if e.op == "floordiv":
                return inner[0] // c, inner[1] // c
            if e.op == "ceildiv":
                return -((-inner[0]) // c), -((-inner[1]) // c)
            if inner[1] - inner[0] < c and inner[0] % c <= inner[1] % c:
                return inner[0] % c, inner[1] % c
            return 0, c - 1
        return None

    def visit_other(self, e: Expr, env: IntervalEnv) -> Interval | None:
        return None


_INTERVAL = _Interval()


def loop_interval(loop: AffineFor, env: IntervalEnv) -> Interval | None:
    """The range of a loop's index: from the least lower bound to the greatest upper bound less one."""
    lo = interval(loop.lower, env)
    hi = interval(loop.upper, env)
    if lo is None or hi is None:
        return None
    return lo[0], hi[1] - 1


def add_facts(cond: Expr, env: IntervalEnv) -> None:
    """Records what an `affine.if` condition guarantees inside its body."""
    if isinstance(cond, ex.Binary) and cond.op == "and":
        add_facts(cond.lhs, env)
        add_facts(cond.rhs, env)
        return
    if not (isinstance(cond, ex.Binary) and cond.op in COMPARISONS):
        return
    form = linear_form(ex.Binary("-", cond.lhs, cond.rhs))
    if form is None or not form[0]:
        return
    coeffs, c = form
    # cond is `s + c OP 0` with s the linear part.
    lo: int | None = None
    hi: int | None = None
    if cond.op in (">=", "=="):
        lo = -c
    if cond.op == ">":
        lo = -c + 1
    if cond.op in ("<=", "=="):
        hi = -c
    if cond.op == "<":
        hi = -c - 1
    _narrow(env, coeffs, lo, hi)
    negated = tuple((k, -v) for k, v in coeffs)
    _narrow(env, negated, None if hi is None else -hi, None if lo is None else -lo)
    if len(coeffs) == 1 and abs(coeffs[0][1]) == 1 and coeffs[0][0].startswith("%"):
        # A bound on a single index also narrows that index itself.
        fact = env.facts[coeffs]
        if coeffs[0][1] == -1:
            fact = (-fact[1], -fact[0])
        known = env.vars.get(coeffs[0][0])
        if known is not None:
            env.vars[coeffs[0][0]] = (max(known[0], fact[0]), min(known[1], fact[1]))


def add_bound_facts(loop: AffineFor, env: IntervalEnv) -> None:
    """Records what a loop's bounds say about its index relative to other indices (`%j <= %i` inside
    `affine.for %j = 0 to %i + 1`, `%q + %s >= 1` inside `affine.for %q = max(0, 1 - %s) to ...`), so accesses
    such as `X[%q + %s - 1]` are proven in bounds."""
    var = ex.IndexRef(loop.var)
    lowers = loop.lower.args if isinstance(loop.lower, ex.Call) and loop.lower.func == "max" else (loop.lower,)
    uppers = loop.upper.args if isinstance(loop.upper, ex.Call) and loop.upper.func == "min" else (loop.upper,)
    for low in lowers:
        add_facts(ex.Binary(">=", var, low), env)
    for high in uppers:
        add_facts(ex.Binary("<", var, high), env)


_BIG = 1 << 62


def _narrow(env: IntervalEnv, key: Coeffs, lo: int | None, hi: int | None) -> None:
    old = env.facts.get(key, (-_BIG, _BIG))
    env.facts[key] = (max(old[0], lo if lo is not None else -_BIG), min(old[1], hi if hi is not None else _BIG))


# ---- accesses under a loop ------------------------------------------------------------------------


@dataclass(frozen=True)
class AccessSite:
    access: ex.Access
    write: bool
    stmt: Assign


def accesses(body: list[KStmt]) -> list[AccessSite]:
    """Every tensor access in `body` (nested loops and guards included), in program order."""
    sites: list[AccessSite] = []
    for stmt in body:
        if isinstance(stmt, AffineFor | AffineIf):
            sites.extend(accesses(stmt.body))
        elif isinstance(stmt, Assign):
            for node in walk(stmt.value):
                if isinstance(node, ex.Access):
                    sites.append(AccessSite(node, False, stmt))
            if stmt.reduction is not None:
                sites.append(AccessSite(stmt.target, False, stmt))  # a reduction reads its target too
            sites.append(AccessSite(stmt.target, True, stmt))
    return sites


def bound_vars(body: list[KStmt]) -> set[str]:
    """The loop indices that `body` binds (as '%name')."""
    names: set[str] = set()
    for stmt in body:
        if isinstance(stmt, AffineFor):
            names.add("%" + stmt.var)
            names |= bound_vars(stmt.body)
        elif isinstance(stmt, AffineIf):
            names |= bound_vars(stmt.body)
    return names


def index_vars(expr: Expr) -> set[str]:
    return {"%" + r.name for r in free_indices(expr)}


def partitions(loop: AffineFor) -> bool:
    """True when distinct iterations of `loop` touch disjoint elements of every tensor the loop writes, so the
    iterations may run in parallel: each written tensor is accessed, in every read and write under the loop, at
    one dimension through the same expression `a*%i + (outer terms)` with a != 0 and no inner index."""
    var = "%" + loop.var
    inner = bound_vars(loop.body)
    sites = accesses(loop.body)
    written = {s.access.tensor for s in sites if s.write}
    for tensor in written:
        mine = [s.access for s in sites if s.access.tensor == tensor]
        rank = len(mine[0].indices)
        ok = False
        for d in range(rank):
            form = linear_form(mine[0].indices[d])
            if form is None:
                continue
            names = dict(form[0])
            if names.get(var, 0) == 0 or any(k in inner for k in names):
                continue
            if all(len(a.indices) == rank and linear_form(a.indices[d]) == form for a in mine):
                ok = True
                break
        if not ok:
            return False
    return True
