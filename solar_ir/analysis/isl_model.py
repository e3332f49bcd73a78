"""The polyhedral (ISL) model of a kernel: one statement instance set and access relations per assignment.

Every `Assign` of a kernel becomes an ISL statement `S<n>` whose set dimensions are its enclosing loop
indices (outermost first). Size parameters and enclosing `solar.for` indices are ISL parameters. Counting
uses barvinok's symbolic `card()`, so it is exact and instant also for triangular domains and with
parameters; nothing is enumerated.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, TypeVar

import islpy as isl

from solar.ir.analysis.floor_division import merge_floor_division, split_floor_bound
from solar.ir.analysis.formula import Formula, Number, is_symbolic
from solar.ir.analysis.subscript_facts import at_most, guarded_in_bounds
from solar.ir.expr import (
    Access,
    Binary,
    Call,
    Expr,
    IndexRef,
    IntLit,
    NameRef,
    Unary,
    format_expr,
    walk,
)
from solar.ir.expr_visitor import ExprVisitor
from solar.ir.ops import AffineFor, AffineIf, Assign, KernelOp, KStmt, LocalDecl, walk_stmts
from solar.ir.types import Dim, TensorType

# Words ISL's parser reserves; an IR name equal to one gets a prefix in ISL text.
_ISL_WORDS = frozenset({"and", "or", "not", "exists", "floor", "ceil", "mod", "min", "max", "infty", "true",
                        "false", "NaN", "rat", "implies", "xor", "cst"})
T = TypeVar("T")
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def isl_name(name: str) -> str:
    if _PLAIN.match(name) and name not in _ISL_WORDS:
        return name
    return "v_" + re.sub(r"[^A-Za-z0-9_]", "_", name)


class UnsupportedForISL(ValueError):
    """A construct the polyhedral model does not express (reported as a remark, not a crash)."""

    def __init__(self, message: str, expr: Expr | None = None) -> None:
        super().__init__(message)
        self.expr = expr


def isl_expr(expr: Expr, names: dict[str, str]) -> str:
    """An affine IR expression in ISL syntax; `names` maps '%index' and parameter names to ISL names."""
    return _ISL_TEXT.visit(expr, names)


class _IslText(ExprVisitor[str]):
    """Affine expressions as ISL text; any other expression is UnsupportedForISL."""

    def visit_int_lit(self, e: IntLit, names: dict[str, str]) -> str:
        return str(e.value)

    def visit_index_ref(self, e: IndexRef, names: dict[str, str]) -> str:
        return names["%" + e.name]

    def visit_name_ref(self, e: NameRef, names: dict[str, str]) -> str:
        return names.get(e.name, isl_name(e.name))

    def visit_unary(self, e: Unary, names: dict[str, str]) -> str:
        if e.op != "-":
            return self.visit_other(e, names)
        return f"(-{self.visit(e.operand, names)})"

    def visit_binary(self, e: Binary, names: dict[str, str]) -> str:
        if e.op in ("<", "<=") and split_floor_bound(e.rhs) is not None:
            return below(self.visit(e.lhs, names), e.rhs, names, strict=e.op == "<")
        if e.op in (">", ">=") and split_floor_bound(e.lhs) is not None:
            return below(self.visit(e.rhs, names), e.lhs, names, strict=e.op == ">")
        if e.op == "floordiv":  # one floor for a nest of them: ISL works faster with fewer (floor_division)
            e = merge_floor_division(e)
        a, b = self.visit(e.lhs, names), self.visit(e.rhs, names)
        if e.op in ("+", "-", "*"):
            return f"({a} {e.op} {b})"
        if e.op == "floordiv":
            return f"floor(({a})/{b})"
        if e.op == "ceildiv":
            return f"ceil(({a})/{b})"
        if e.op == "mod":
            return f"(({a}) mod {b})"
        if e.op in ("<", "<=", ">", ">=", "=="):
            return f"{a} {'=' if e.op == '==' else e.op} {b}"
        if e.op == "and":
            return f"{a} and {b}"
        return self.visit_other(e, names)

    def visit_other(self, e: Expr, names: dict[str, str]) -> str:
        raise UnsupportedForISL(f"`{format_expr(e)}` is not affine", e)


_ISL_TEXT = _IslText()


def below(lhs: str, bound: Expr, names: dict[str, str], *, strict: bool = True) -> str:
    """ISL text for `lhs < bound` (`<=` unless `strict`); a bound `rest + floor(y / d)` is written without
    the floor, `d·(lhs - rest + 1) <= y`, the same integer points (floor_division.split_floor_bound)."""
    split = split_floor_bound(bound)
    if split is None:
        return f"{lhs} {'<' if strict else '<='} {isl_expr(bound, names)}"
    rest, dividend, divisor = split
    diff = lhs if rest is None else f"({lhs}) - ({isl_expr(rest, names)})"
    return f"{divisor} * ({diff}{' + 1' if strict else ''}) <= {isl_expr(dividend, names)}"


def within(lhs: str, bound: Dim, names: dict[str, str]) -> str:
    """The end of a chain `... <= lhs < bound`: `lhs < bound`, or `lhs and <below>` for a floor bound."""
    if isinstance(bound, Expr) and split_floor_bound(bound) is not None:
        return f"{lhs} and {below(lhs, bound, names)}"
    return f"{lhs} < {dim_text(bound, names)}"


def dim_text(dim: Dim, names: dict[str, str]) -> str:
    if isinstance(dim, int):
        return str(dim)
    if all(names.get(n, plain) == plain for n in dim_names(dim) for plain in (isl_name(n),)):
        return _plain_dim_text(dim)  # the usual names: the text is the dimension's own, made once
    return isl_expr(dim, names)


@lru_cache(maxsize=4096)
def _plain_dim_text(dim: Expr) -> str:
    return isl_expr(dim, {})


@dataclass
class StatementModel:
    stmt: Assign
    name: str  # S0, S1, ... in program order
    indices: list[str]  # IR loop index names, outermost first
    loops: list[AffineFor]  # the enclosing loops, outermost first
    accesses: list[Access]  # what the statement reads, in order (`reads` pairs each with its relation)
    isl: _StatementIsl = field(repr=False)  # its ISL objects, shared by kernels of the same structure

    @property
    def guards(self) -> list[Expr]:
        """The conditions of the `affine.if`s around the statement, outermost first."""
        return [s.cond for s in self.isl.scope if isinstance(s, AffineIf)]

    @property
    def domain(self) -> isl.Set:
        return self.isl.domain

    @property
    def write(self) -> isl.Map:  # statement instance -> element of the target
        return self.isl.write

    @property
    def reads(self) -> list[tuple[Access, isl.Map]]:
        return list(zip(self.accesses, self.isl.reads, strict=True))

    @property
    def schedule(self) -> isl.Map:  # statement instance -> time (2d+1 form), for dependence checks
        return self.isl.schedule

    def points(self) -> isl.PwQPolynomial:
        return self.domain.card()


@dataclass
class KernelModel:
    kernel: KernelOp
    params: list[str]  # ISL parameter names: size parameters then solar.for indices
    context: isl.Set  # what the parameters satisfy
    tensors: dict[str, TensorType]
    boxes: dict[str, isl.Set]  # every element of each tensor
    statements: list[StatementModel] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    loop_params: list[str] = field(default_factory=list)  # ISL names of the solar.for indices modelled
    # Answers about the ISL objects above, shared by every kernel of the same structure (see `remember`).
    memo: dict[Hashable, Any] = field(default_factory=dict, repr=False, compare=False)

    def remember(self, question: Hashable, answer: Callable[[], T]) -> T:
        """`answer()`, computed once for all kernels that share this model's ISL objects (structurally
        identical kernels: a ResNet-101 has 656 kernels of 73 structures). `question` names what is asked
        by statement names, positions and tensor names, never by an object of one kernel."""
        if question not in self.memo:
            self.memo[question] = answer()
        return self.memo[question]

    def out_of_bounds(self, rel: isl.Map, tensor: str) -> isl.Map:
        """The part of an access relation that touches elements outside `tensor`'s shape."""
        # The complement once per tensor: a lift asks for every access.
        outside = self.remember(("outside", tensor), lambda: self.boxes[tensor].complement())
        return rel.intersect_range(outside)

    def in_bounds(self, statement: StatementModel, position: int) -> bool:
        """Whether access `position` of `statement` (0: its write, then its reads in order) stays inside
        its tensor at every point."""
        access = statement.stmt.target if position == 0 else statement.accesses[position - 1]

        def relation() -> isl.Map:
            return statement.write if position == 0 else statement.isl.reads[position - 1]

        return self.remember(("in bounds", statement.name, position),
                             lambda: _within_loops(access, statement.loops, self.tensors[access.tensor])
                             or guarded_in_bounds(access, statement.loops, statement.guards,
                                                  self.tensors[access.tensor].shape)
                             or self.out_of_bounds(relation(), access.tensor).is_empty())

    def reads_of(self, tensor: str) -> isl.UnionMap | None:
        maps = [m for s in self.statements for a, m in zip(s.accesses, s.isl.reads, strict=True) if a.tensor == tensor]
        return _union(maps)

    def writes_of(self, tensor: str) -> isl.UnionMap | None:
        return _union([s.write for s in self.statements if s.stmt.target.tensor == tensor])

    def footprint(self, tensor: str, *, written: bool = False) -> isl.Set | None:
        """The elements of `tensor` the kernel reads (or writes): the image of the accesses."""
        rel = self.writes_of(tensor) if written else self.reads_of(tensor)
        if rel is None:
            return None
        rng = rel.range()
        return isl.Set.from_union_set(rng) if not rng.is_empty() else self.boxes[tensor].empty(
            self.boxes[tensor].get_space())


def _within_loops(access: Access, loops: list[AffineFor], tensor: TensorType) -> bool:
    """Whether every subscript of `access` is a number inside its dimension or a loop index that starts at 0
    or above and stops at most at the size of its dimension (`X[%i]` under `affine.for %i = 0 to N` with X
    of N elements): then the access is in bounds at every point, which ISL need not be asked (a network
    asks for thousands)."""
    bounds = {lp.var: lp for lp in loops}  # an inner loop of the same name is the one subscripts mean
    for index, dim in zip(access.indices, tensor.shape, strict=True):
        if isinstance(index, IntLit) and isinstance(dim, int) and 0 <= index.value < dim:
            continue  # `Mean[0, %c]` of a 1xC tensor
        loop = bounds.get(index.name) if isinstance(index, IndexRef) else None
        if loop is None:
            return False
        lows = loop.lower.args if isinstance(loop.lower, Call) and loop.lower.func == "max" else (loop.lower,)
        highs = loop.upper.args if isinstance(loop.upper, Call) and loop.upper.func == "min" else (loop.upper,)
        if not any(isinstance(lo, IntLit) and lo.value >= 0 for lo in lows):
            return False
        if not any(at_most(hi, dim) for hi in highs):
            return False
    return True


def _union(maps: list[isl.Map]) -> isl.UnionMap | None:
    if not maps:
        return None
    result = isl.UnionMap.from_map(maps[0])
    for m in maps[1:]:
        result = result.union(isl.UnionMap.from_map(m))
    return result


def _params_prefix(params: Iterable[str]) -> str:
    params = list(params)
    return f"[{', '.join(params)}] -> " if params else ""


_MODELS: dict[Hashable, KernelModel] = {}  # by kernel structure and model options; see build_model


def build_model(kernel: KernelOp, size_params: list[str], for_bounds: dict[str, tuple[Expr, Expr]],
                all_loops: bool = False) -> KernelModel:
    """The ISL model of `kernel`. `for_bounds` gives each enclosing solar.for index its [lower, upper),
    outermost first. Only the indices the kernel mentions (and those their bounds need) become parameters,
    unless `all_loops` (to count a kernel over every iteration of its loops): a kernel that does not use
    %t has the same model at every iteration. Structurally identical kernels (the same tensors, body and
    options; the repeated blocks of a network) share one model's ISL objects and its `memo`; each gets its
    own statements and accesses, so locations stay its own."""
    key = (kernel_structure(kernel), tuple(size_params), tuple(for_bounds.items()), all_loops)
    shared = _MODELS.get(key)
    if shared is None:
        shared = _build_model(kernel, size_params, for_bounds, all_loops)
        if len(_MODELS) >= 4096:
            _MODELS.clear()
        _MODELS[key] = shared
    assigns = [s for s in walk_stmts(kernel.body) if isinstance(s, Assign)]  # the walker's order
    statements = [StatementModel(a, sm.name, sm.indices, sm.loops, _reads(a), sm.isl)
                  for a, sm in zip(assigns, shared.statements, strict=True)]
    return KernelModel(kernel, shared.params, shared.context, shared.tensors, shared.boxes, statements,
                       dict(shared.names), shared.loop_params, shared.memo)


def clear_caches() -> None:
    """Forget every parsed ISL object and shared model (benchmarks time a cold start)."""
    cached_set.cache_clear()
    cached_map.cache_clear()
    _MODELS.clear()


def kernel_structure(kernel: KernelOp) -> Hashable:
    """What a kernel's model depends on, as a hashable value: its tensors (names, roles, types) and its body
    (expressions compare by structure, not location)."""
    return (tuple(b.name for b in kernel.inputs), tuple(d.name for d in kernel.outputs),
            tuple(kernel.tensors().items()), _body_structure(kernel.body))


def _body_structure(body: list[KStmt]) -> tuple:
    out: list[tuple] = []
    for s in body:
        if isinstance(s, AffineFor):
            out.append(("for", s.var, s.lower, s.upper, s.step, _body_structure(s.body)))
        elif isinstance(s, AffineIf):
            out.append(("if", s.cond, _body_structure(s.body)))
        elif isinstance(s, Assign):
            out.append(("=", s.target, s.op, s.value))
    return tuple(out)  # locals: their types are among the tensors


def _reads(s: Assign) -> list[Access]:
    return [a for a in walk(s.value) if isinstance(a, Access)]


def _build_model(kernel: KernelOp, size_params: list[str], for_bounds: dict[str, tuple[Expr, Expr]],
                 all_loops: bool) -> KernelModel:
    used, used_indices = _used_params(kernel)
    loops = {v for v in for_bounds if all_loops or v in used_indices}
    for var in reversed(list(for_bounds)):
        if var in loops:
            lo, hi = for_bounds[var]
            loops |= {i.name for e in (lo, hi) for i in walk(e) if isinstance(i, IndexRef)} & set(for_bounds)
            used |= {n.name for e in (lo, hi) for n in walk(e) if isinstance(n, NameRef)}
    for_bounds = {v: b for v, b in for_bounds.items() if v in loops}
    size_params = [p for p in size_params if p in used]
    names: dict[str, str] = {p: isl_name(p) for p in size_params}
    for var in for_bounds:
        names["%" + var] = isl_name("t_" + var)
    params = [names[p] for p in size_params] + [names["%" + v] for v in for_bounds]
    prefix = _params_prefix(params)
    tensors = kernel.tensors()
    # The context: sizes are positive, every dimension of every tensor is at least 0 (a local of M - 1 rows
    # is empty at M = 1, and the counts must still hold there); solar.for indices are in range.
    constraints = [f"{names[p]} >= 1" for p in size_params]
    for t in tensors.values():
        constraints += [f"{dim_text(d, names)} >= 0" for d in t.shape if not isinstance(d, int)]
    for var, (lo, hi) in for_bounds.items():
        constraints.append(f"{isl_expr(lo, names)} <= {within(names['%' + var], hi, names)}")
    context = cached_set(prefix + "{ : " + (" and ".join(constraints) or "true") + " }")
    boxes = _Boxes(tensors, dict(names), prefix, context)
    model = KernelModel(kernel, params, context, tensors, boxes, names=names,
                        loop_params=[names["%" + v] for v in for_bounds])
    depth = _max_depth(kernel.body)
    _Walker(model, prefix, depth).walk(kernel.body, [], [])
    return model


class _Boxes(dict[str, isl.Set]):
    """Every element of each tensor, as an ISL set made when first asked for: most questions about most
    kernels are answered without ISL (`_within_loops`), and parsing a box is a tenth of a network's lift."""

    def __init__(self, tensors: dict[str, TensorType], names: dict[str, str], prefix: str, context: isl.Set) -> None:
        super().__init__()
        self.tensors, self.names, self.prefix, self.context = tensors, names, prefix, context

    def __missing__(self, tname: str) -> isl.Set:
        t = self.tensors[tname]
        idx = [f"d{k}" for k in range(t.rank)]
        cons = " and ".join(f"0 <= {within(f'd{k}', d, self.names)}" for k, d in enumerate(t.shape)) or "true"
        box = self[tname] = cached_set(f"{self.prefix}{{ {isl_name(tname)}[{', '.join(idx)}] : {cons} }}"
                                       ).intersect_params(self.context)
        return box


def loop_iterations(for_bounds: dict[str, tuple[Expr, Expr]], size_params: list[str]) -> isl.Set:
    """The iterations of nested solar.for loops (outermost first): `[sizes] -> { [t, u] : lo <= t < hi ... }`."""
    names = {p: isl_name(p) for p in size_params}
    names.update({"%" + v: isl_name("t_" + v) for v in for_bounds})
    cons = [f"{isl_expr(lo, names)} <= {names['%' + v]} < {isl_expr(hi, names)}" for v, (lo, hi) in for_bounds.items()]
    dims = ", ".join(names["%" + v] for v in for_bounds)
    return cached_set(f"{_params_prefix(names[p] for p in size_params)}{{ [{dims}] : {' and '.join(cons) or 'true'} }}")


def _used_params(kernel: KernelOp) -> tuple[set[str], set[str]]:
    """Size parameters and index names that a kernel mentions (in its types, bounds, guards and indices)."""
    used: set[str] = set()
    indices: set[str] = set()
    for t in kernel.tensors().values():
        for d in t.shape:
            if isinstance(d, Expr):
                used |= dim_names(d)
    for stmt in walk_stmts(kernel.body):
        exprs: list[Expr] = []
        if isinstance(stmt, AffineFor):
            exprs = [stmt.lower, stmt.upper]
        elif isinstance(stmt, AffineIf):
            exprs = [stmt.cond]
        elif isinstance(stmt, Assign):
            exprs = [stmt.target, stmt.value]
        for e in exprs:
            for n in walk(e):
                if isinstance(n, NameRef):
                    used.add(n.name)
                elif isinstance(n, IndexRef):
                    indices.add(n.name)
    return used, indices


@lru_cache(maxsize=4096)
def dim_names(dim: Expr) -> frozenset[str]:
    """The size parameters a dimension names (a network's types share a few dimension objects)."""
    return frozenset(n.name for n in walk(dim) if isinstance(n, NameRef))


@lru_cache(maxsize=65536)
def cached_set(text: str) -> isl.Set:
    return isl.Set(text)


@lru_cache(maxsize=65536)
def cached_map(text: str) -> isl.Map:
    return isl.Map(text)


def _max_depth(body: list[KStmt]) -> int:
    best = 0
    for s in body:
        if isinstance(s, AffineFor):
            best = max(best, 1 + _max_depth(s.body))
        elif isinstance(s, AffineIf):
            best = max(best, _max_depth(s.body))
    return best


class _Walker:
    """Walks a kernel's body into its statements; their ISL objects are made when first asked for (most
    questions about most kernels are answered from the IR, and a network has hundreds of kernels)."""

    def __init__(self, model: KernelModel, prefix: str, depth: int) -> None:
        self.model = model
        self.prefix = prefix
        self.depth = depth
        self.base = dict(model.names)  # the names of parameters and solar.for indices
        self.texts: dict[int, list[str]] = {}  # the ISL constraints of each loop and guard, by id

    def walk(self, body: list[KStmt], scope: list[AffineFor | AffineIf], position: list[int]) -> None:
        slot = 0
        for s in body:
            if isinstance(s, LocalDecl):
                continue
            if isinstance(s, AffineFor):
                self.model.names["%" + s.var] = isl_name(s.var)
                self.walk(s.body, [*scope, s], [*position, slot])
                slot += 1
            elif isinstance(s, AffineIf):
                self.walk(s.body, [*scope, s], position)
            elif isinstance(s, Assign):
                loops = [lp for lp in scope if isinstance(lp, AffineFor)]
                name, reads = f"S{len(self.model.statements)}", _reads(s)
                self.model.statements.append(StatementModel(s, name, [lp.var for lp in loops], loops, reads,
                                                            _StatementIsl(self, s, reads, name, scope,
                                                                          [*position, slot])))
                slot += 1

    def names(self, scope: list[AffineFor | AffineIf]) -> dict[str, str]:
        names = dict(self.base)
        names.update({"%" + lp.var: isl_name(lp.var) for lp in scope if isinstance(lp, AffineFor)})
        return names

    def constraints(self, scope: list[AffineFor | AffineIf]) -> list[str]:
        out: list[str] = []
        names = dict(self.base)
        for s in scope:
            if isinstance(s, AffineFor):
                names["%" + s.var] = isl_name(s.var)
            if id(s) not in self.texts:
                self.texts[id(s)] = (self._loop_constraints(s, names) if isinstance(s, AffineFor)
                                     else [isl_expr(s.cond, names)])
            out += self.texts[id(s)]
        return out

    def _loop_constraints(self, loop: AffineFor, names: dict[str, str]) -> list[str]:
        var = isl_name(loop.var)
        out = []
        lows = loop.lower.args if isinstance(loop.lower, Call) and loop.lower.func == "max" else (loop.lower,)
        highs = loop.upper.args if isinstance(loop.upper, Call) and loop.upper.func == "min" else (loop.upper,)
        out += [f"{var} >= {isl_expr(lo, names)}" for lo in lows]
        out += [below(var, hi, names) for hi in highs]
        if loop.step != 1:
            # The loop starts at the largest lower bound and steps from there: one disjunct per bound, for
            # the points where that bound is the largest (ties go to the first).
            starts = [isl_expr(lo, names) for lo in lows]
            cases = []
            for k, start in enumerate(starts):
                largest = [f"{start} {'>' if j < k else '>='} {other}" for j, other in enumerate(starts) if j != k]
                cases.append(" and ".join([*largest, f"exists (e_{var} : {var} = {start} + {loop.step} * e_{var})"]))
            out.append(cases[0] if len(cases) == 1 else "(" + " or ".join(f"({c})" for c in cases) + ")")
        return out


class _StatementIsl:
    """The ISL objects of one statement, each made when first asked for."""

    def __init__(self, walker: _Walker, stmt: Assign, reads: list[Access], name: str,
                 scope: list[AffineFor | AffineIf], position: list[int]) -> None:
        self.walker, self.name, self.scope, self.position = walker, name, scope, position
        # As they are now: a pass may rewrite the statement later (mask_domains), and what is built later
        # must still be the model of the structure it is shared under.
        self.target, self.accesses = stmt.target, reads
        self.dims = [isl_name(lp.var) for lp in scope if isinstance(lp, AffineFor)]
        self.head = f"{name}[{', '.join(self.dims)}]"

    @cached_property
    def domain(self) -> isl.Set:
        w = self.walker
        # Parsed under one tuple name and renamed: S0 of one kernel and S4 of another often have the same
        # domain (a third of a DenseNet's), and renaming keeps the parsed constraints as they are.
        conditions = " and ".join(w.constraints(self.scope)) or "true"
        return cached_set(f"{w.prefix}{{ S[{', '.join(self.dims)}] : {conditions} }}"
                          ).set_tuple_name(self.name).intersect_params(w.model.context)

    def _access(self, acc: Access) -> isl.Map:
        names = self.walker.names(self.scope)
        idx = ", ".join(isl_expr(i, names) for i in acc.indices)
        return cached_map(f"{self.walker.prefix}{{ {self.head} -> {isl_name(acc.tensor)}[{idx}] }}"
                          ).intersect_domain(self.domain)

    @cached_property
    def write(self) -> isl.Map:
        return self._access(self.target)

    @cached_property
    def reads(self) -> list[isl.Map]:
        return [self._access(a) for a in self.accesses]

    @cached_property
    def schedule(self) -> isl.Map:
        # Loop indices interleaved with statement positions: lexicographic order is execution order.
        depth, position = self.walker.depth, self.position
        times: list[str] = []
        for level in range(depth + 1):
            times.append(str(position[level]) if level < len(position) else "0")
            if level < depth:
                times.append(self.dims[level] if level < len(self.dims) else "0")
        return cached_map(f"{self.walker.prefix}{{ {self.head} -> [{', '.join(times)}] }}"
                          ).intersect_domain(self.domain)


# ---- evaluating counts ---------------------------------------------------------------------------


def evaluate(poly: isl.PwQPolynomial, params: Mapping[str, Number]) -> Number | None:
    """The value of a (piecewise quasi-)polynomial count at the given parameter values, or None when a
    parameter has no value."""
    space = poly.get_domain_space()
    if is_symbolic(params):  # symbolic sizes (formula.symbols): the count's closed form
        names = [space.get_dim_name(isl.dim_type.param, k) for k in range(space.dim(isl.dim_type.param))]
        return Formula.from_isl(poly) if all(n in params for n in names) else None
    point = isl.Point.zero(space)
    for k in range(space.dim(isl.dim_type.param)):
        name = space.get_dim_name(isl.dim_type.param, k)
        if name not in params:
            return None
        point = point.set_coordinate_val(isl.dim_type.param, k, isl.Val(params[name]))
    value = poly.eval(point)
    return int(value.to_python())


def count(s: isl.Set, params: dict[str, int]) -> int | None:
    return evaluate(s.card(), params)


def point_text(point: isl.Point, names: list[str], space_dims: int) -> str:
    """`%i = 3, %k = 0` for the first `space_dims` set coordinates of an ISL point."""
    parts = []
    for k in range(space_dims):
        value = point.get_coordinate_val(isl.dim_type.set, k).to_python()
        parts.append(f"%{names[k]} = {value}")
    return ", ".join(parts)


def param_text(point: isl.Point, names: dict[str, str] | None = None) -> str:
    """`N = 4, %t = 7` for the parameters of an ISL point; `names` maps IR names to ISL names (solar.for
    indices are `%t` in the IR and `t_t` in ISL)."""
    space = point.get_space()
    ir_names = {v: k for k, v in (names or {}).items()}
    parts = []
    for k in range(space.dim(isl.dim_type.param)):
        name = space.get_dim_name(isl.dim_type.param, k)
        parts.append(f"{ir_names.get(name, name)} = "
                     f"{point.get_coordinate_val(isl.dim_type.param, k).to_python()}")
    return ", ".join(parts)
