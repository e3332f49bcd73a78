"""Masks as where-clauses: a kernel that reads a mask computed from index comparisons (`index_values`) does
only the work on the mask's live points, as a kernel that skips masked blocks does.

Three steps, on the kernel's body:

1. **Substitute.** Each read of a mask input becomes the affine condition it holds at that read
   (`M[%i, %j]` becomes `%j <= %i`); an additive mask becomes `select(cond, 0.0, -inf)`. A mask that is not
   one convex region, or that depends on data, stays a read (dense) and is reported.
2. **Guard.** A reduction whose value is its identity wherever the condition fails (`max= select(c, s,
   -inf)`, `+= exp(-inf - m)`, `+= P * V` with `P` zero off the condition) runs only under `affine.if c`.
   A local stored as zero off the condition is remembered as such.
3. **Liveness.** A local read only under one condition is written only under it (the scores `S = Q·K`
   that the softmax reads only where the mask holds).

Rewrites assume finite operands (0 · x = 0, -inf - x = -inf), as masked attention kernels do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import islpy as isl

from solar.ir.expr import Access, Binary, BoolLit, Call, Cast, Expr, FloatLit, IndexRef, IntLit, NameRef, rewrite, walk
from solar.ir.expr_visitor import ExprVisitor
from solar.ir.ops import AffineFor, AffineIf, Assign, KernelOp, KStmt, LocalDecl, Value

from .index_values import IndexValues, TwoValued, is_masked_off
from .isl_model import UnsupportedForISL, isl_expr

_IDENTITY = {"+=": 0.0, "*=": 1.0, "max=": -math.inf, "min=": math.inf}


@dataclass
class MaskOutcome:
    """What restricting a kernel found: the masks it turned into conditions and those it left dense."""

    applied: list[str] = field(default_factory=list)  # input tensor names read as conditions now
    dense: list[tuple[str, str]] = field(default_factory=list)  # (input tensor, why it stays dense)
    guarded: int = 0  # statements that now run under a mask condition
    # output tensor -> what it holds outside a condition (over its positions), for the kernels that read it
    facts: dict[str, OffValue] = field(default_factory=dict)

    @property
    def dropped_inputs(self) -> list[str]:
        return self.applied


@dataclass(frozen=True)
class OffValue:
    """A tensor that equals the constant `off` wherever `live` (over its positions `%@0`, ...) fails: the
    scores after an additive mask (-inf), the probabilities of a softmax over them (0)."""

    live: Expr
    off: float


@dataclass
class _Site:
    """An assignment, the list that holds it and its enclosing loops (outermost first)."""

    stmt: Assign
    parent: list[KStmt]
    loops: list[AffineFor]
    guard: Expr | None = None  # the mask condition this rewrite put around it


def restrict_masked_domains(kernel: KernelOp, values: IndexValues,
                            known: dict[str, OffValue] | None = None) -> MaskOutcome:
    """Rewrites `kernel` in place so that it iterates only where its index masks hold (see the module).
    `known` names inputs that another kernel left constant outside a condition (`MaskOutcome.facts`): eager
    attention's softmax and P·V read the masked scores as a kernel reads the mask itself."""
    outcome = MaskOutcome()
    masks: dict[str, isl.Set | TwoValued] = {}
    for b in kernel.inputs:
        t = b.value.type
        if t is None or not (t.dtype.is_bool or t.dtype.is_float) or not _read_as_mask(kernel, b.name):
            continue
        mask = values.mask(b.value)
        if mask is None:
            if t.dtype.is_bool:
                outcome.dense.append((b.name, f"%{b.value.name} depends on data"))
            continue
        masks[b.name] = mask
    # A tensor that is a function of its indices is read as the mask it is; a known one only otherwise.
    known = {b.name: known[b.name] for b in kernel.inputs if known and b.name in known and b.name not in masks}
    if not masks and not known:
        return outcome
    sites = _sites(kernel.body, [])
    conds: set[Expr] = set()
    try:
        substituted = [_fold(_substitute(site, masks, values, conds, known)) for site in sites]
        if known:
            _check_rows(sites, substituted, known, values)
    except _Dense as why:
        outcome.dense.append((why.tensor, str(why)))
        return outcome  # nothing was rewritten yet
    for site, value in zip(sites, substituted, strict=True):
        site.stmt.value = value
    for name in masks:
        if not any(_reads(s.stmt.value, name) for s in sites):
            outcome.applied.append(name)
    _guard(sites, conds, {d.name for d in kernel.locals()})
    for site in sites:
        if site.guard is not None:
            outcome.guarded += 1
            k = next(i for i, s in enumerate(site.parent) if s is site.stmt)
            site.parent[k] = AffineIf(site.guard, [site.stmt], site.stmt.loc)
    kernel.inputs = [b for b in kernel.inputs if b.name not in outcome.applied]
    outcome.facts = _output_facts(kernel, sites, conds, values)
    return outcome


class _Dense(Exception):
    def __init__(self, tensor: str, why: str) -> None:
        super().__init__(why)
        self.tensor = tensor


def _read_as_mask(kernel: KernelOp, name: str) -> bool:
    return any(isinstance(s, Assign) and _reads(s.value, name) for s in _walk(kernel.body))


def _walk(body: list[KStmt]) -> list[KStmt]:
    out: list[KStmt] = []
    for s in body:
        out.append(s)
        if isinstance(s, AffineFor | AffineIf):
            out += _walk(s.body)
    return out


def _reads(e: Expr, tensor: str) -> bool:
    return any(isinstance(n, Access) and n.tensor == tensor for n in walk(e))


def _sites(body: list[KStmt], loops: list[AffineFor]) -> list[_Site]:
    out: list[_Site] = []
    for s in body:
        if isinstance(s, AffineFor):
            out += _sites(s.body, [*loops, s])
        elif isinstance(s, AffineIf):
            out += _sites(s.body, loops)
        elif isinstance(s, Assign):
            out.append(_Site(s, body, loops))
        elif not isinstance(s, LocalDecl):
            raise TypeError(f"unexpected kernel statement {s!r}")
    return out


# ---- 1. substitution -----------------------------------------------------------------------------


def _substitute(site: _Site, masks: dict[str, isl.Set | TwoValued], values: IndexValues, conds: set[Expr],
                known: dict[str, OffValue]) -> Expr:
    def replace(e: Expr) -> Expr | None:
        if isinstance(e, Access) and e.tensor in known:
            fact = known[e.tensor]
            cond = _from_positions(fact.live, e)
            if cond is None:
                return None  # read at other than its own positions: it stays a dense read
            conds.add(cond)
            return Call("select", (cond, e, FloatLit(fact.off)))
        if not (isinstance(e, Access) and e.tensor in masks):
            return None
        mask = masks[e.tensor]
        region = mask.where if isinstance(mask, TwoValued) else mask
        cond = _condition(region, e, site.loops, values)
        if cond is None:
            raise _Dense(e.tensor, f"the mask {e.tensor} is not one convex region of the indices")
        if isinstance(cond, Expr):
            conds.add(cond)
        if isinstance(mask, TwoValued):
            off = -math.inf if is_masked_off(mask.off) else mask.off
            if isinstance(cond, bool):
                return FloatLit(mask.on if cond else off)
            return Call("select", (cond, FloatLit(mask.on), FloatLit(off)))
        return BoolLit(cond) if isinstance(cond, bool) else cond

    return rewrite(site.stmt.value, replace)


def _condition(region: isl.Set, read: Access, loops: list[AffineFor], values: IndexValues) -> Expr | bool | None:
    """The mask read at `read` as an affine condition on the loop indices (True/False when constant);
    None when it is not one convex region."""
    names = dict(values.names)
    names.update({"%" + loop.var: f"x{k}" for k, loop in enumerate(loops)})
    rank = len(loops)
    idx = ", ".join(f"x{k}" for k in range(rank))
    prefix = values.prefix
    try:
        at = ", ".join(f"({isl_expr(i, names)})" for i in read.indices)
        through = isl.MultiPwAff(f"{prefix}{{ [{idx}] -> [{at}] }}")
        bounds = " and ".join(f"{isl_expr(loop.lower, names)} <= x{k} < {isl_expr(loop.upper, names)}"
                              for k, loop in enumerate(loops)) or "true"
        domain = isl.Set(f"{prefix}{{ [{idx}] : {bounds} }}")
    except (UnsupportedForISL, KeyError):  # KeyError: an index of an enclosing solar.for
        return None
    live = region.preimage_multi_pw_aff(through).intersect(domain).coalesce()
    if live.is_empty():
        return False
    if domain.is_subset(live):
        return True
    pieces = live.gist(domain).coalesce().get_basic_sets()
    if len(pieces) != 1 or pieces[0].dim(isl.dim_type.div):
        return None
    back = {f"x{k}": IndexRef(loop.var) for k, loop in enumerate(loops)}
    back.update({isl_text: NameRef(ir) for ir, isl_text in values.names.items()})
    terms = [_constraint_expr(c, back) for c in pieces[0].get_constraints()]
    if not terms:
        return True
    out = terms[0]
    for t in terms[1:]:
        out = Binary("and", out, t)
    return out


def _constraint_expr(c: isl.Constraint, back: dict[str, Expr]) -> Expr:
    """`Σ a·x + b >= 0` (or `== 0`) as `positive side >= negative side`, in IR names."""
    pos: Expr | None = None
    neg: Expr | None = None
    for name, coeff in c.get_coefficients_by_name().items():
        if name == 1:
            continue
        a = int(coeff.to_python())
        term = back[name] if abs(a) == 1 else Binary("*", IntLit(abs(a)), back[name])
        if a > 0:
            pos = term if pos is None else Binary("+", pos, term)
        elif a < 0:
            neg = term if neg is None else Binary("+", neg, term)
    const = int(c.get_constant_val().to_python())
    if const > 0:
        pos = IntLit(const) if pos is None else Binary("+", pos, IntLit(const))
    elif const < 0:
        neg = IntLit(-const) if neg is None else Binary("+", neg, IntLit(-const))
    lhs, rhs = pos or IntLit(0), neg or IntLit(0)
    # `a >= b` reads better as `b <= a` when the right side is the larger expression (`%j <= %i`).
    return Binary("==", lhs, rhs) if c.is_equality() else Binary("<=", rhs, lhs)


# ---- folding -------------------------------------------------------------------------------------


def _is(e: Expr, value: float) -> bool:
    return isinstance(e, FloatLit | IntLit) and float(e.value) == value


def _fold(e: Expr) -> Expr:
    return rewrite(e, _FOLD_NODE.visit)


class _FoldNode(ExprVisitor[Expr | None]):
    """One bottom-up step: literals through selects, exp, casts and the arithmetic of -inf and 0; None
    keeps the node."""

    def visit_call(self, e: Call) -> Expr | None:
        if e.func == "select" and isinstance(e.args[0], BoolLit):
            return e.args[1] if e.args[0].value else e.args[2]
        if e.func == "exp" and _is(e.args[0], -math.inf):
            return FloatLit(0.0)
        return None

    def visit_cast(self, e: Cast) -> Expr | None:
        return e.operand if isinstance(e.operand, FloatLit) and e.dtype.is_float else None

    def visit_binary(self, e: Binary) -> Expr | None:
        neg_inf = FloatLit(-math.inf)
        a, b = e.lhs, e.rhs
        if e.op == "+":
            # x + select(c, u, v): an additive mask becomes a select of the sums.
            for x, s in ((a, b), (b, a)):
                if isinstance(s, Call) and s.func == "select" and isinstance(s.args[1], FloatLit) and isinstance(
                        s.args[2], FloatLit):
                    on, off = _fold(Binary("+", x, s.args[1])), _fold(Binary("+", x, s.args[2]))
                    return Call("select", (s.args[0], on, off))
            if _is(a, -math.inf) or _is(b, -math.inf):
                return neg_inf
            if _is(b, 0.0):
                return a
            if _is(a, 0.0):
                return b
        if e.op == "-" and _is(a, -math.inf) and not _is(b, -math.inf):
            return neg_inf
        if e.op == "-" and _is(b, 0.0):
            return a
        if e.op == "*" and (_is(a, 0.0) or _is(b, 0.0)):
            return FloatLit(0.0)
        if e.op in ("*", "/") and _is(a, -math.inf) and isinstance(b, FloatLit | IntLit) and b.value > 0:
            return neg_inf
        if e.op == "*" and _is(b, -math.inf) and isinstance(a, FloatLit | IntLit) and a.value > 0:
            return neg_inf
        if e.op == "/" and _is(a, 0.0):
            return FloatLit(0.0)
        return None

    def visit_other(self, e: Expr) -> Expr | None:
        return None


_FOLD_NODE = _FoldNode()


# ---- 2. guards and 3. liveness -------------------------------------------------------------------


def _plain(access: Access) -> list[str] | None:
    """The index names of an access whose every index is a distinct loop index, else None."""
    names = [i.name for i in access.indices if isinstance(i, IndexRef)]
    return names if len(names) == len(access.indices) and len(set(names)) == len(names) else None


def _to_positions(cond: Expr, access: Access) -> Expr | None:
    """`cond` over the loop indices of `access` rewritten over the positions of its tensor (`%@0`, ...)."""
    names = _plain(access)
    if names is None:
        return None
    position = {n: IndexRef(f"@{k}") for k, n in enumerate(names)}
    if any(isinstance(n, IndexRef) and n.name not in position for n in walk(cond)):
        return None  # the condition needs an index the access does not carry
    return rewrite(cond, lambda e: position.get(e.name) if isinstance(e, IndexRef) else None)


def _from_positions(cond: Expr, access: Access) -> Expr | None:
    names = _plain(access)
    if names is None:
        return None
    return rewrite(cond, lambda e: IndexRef(names[int(e.name[1:])]) if isinstance(e, IndexRef)
                   and e.name.startswith("@") else None)


def _guard(sites: list[_Site], conds: set[Expr], locals_: set[str]) -> None:
    zero_off: dict[str, Expr] = {}  # local -> condition (over its positions) outside which it holds zeros
    for site in sites:
        stmt = site.stmt
        candidates = {c for c in conds if any(n == c for n in walk(stmt.value))}
        zero_reads: list[tuple[Access, Expr]] = []
        for n in walk(stmt.value):
            if isinstance(n, Access) and n.tensor in zero_off:
                c = _from_positions(zero_off[n.tensor], n)
                if c is not None:
                    zero_reads.append((n, c))
                    candidates.add(c)
        if len(candidates) != 1:
            continue
        (cond,) = candidates
        off = _fold(rewrite(stmt.value, lambda e, cond=cond, zr=zero_reads: BoolLit(False) if e == cond else (
            FloatLit(0.0) if isinstance(e, Access) and any(e == a and c == cond for a, c in zr) else None)))
        if stmt.op in _IDENTITY and _is(off, _IDENTITY[stmt.op]):
            site.guard = cond
        elif stmt.op == "=" and stmt.target.tensor in locals_ and _is(off, 0.0):
            positions = _to_positions(cond, stmt.target)
            if positions is not None:
                zero_off[stmt.target.tensor] = positions
    _liveness(sites, locals_)
    for site in sites:
        if site.guard is not None:
            cond = site.guard
            site.stmt.value = _fold(rewrite(site.stmt.value, lambda e, cond=cond: BoolLit(True) if e == cond else None))


def _liveness(sites: list[_Site], locals_: set[str]) -> None:
    changed = True
    while changed:
        changed = False
        for name in locals_:
            writers = [s for s in sites if s.stmt.target.tensor == name]
            readers = [s for s in sites if s.stmt.target.tensor != name and _reads(s.stmt.value, name)]
            if not readers or all(w.guard is not None for w in writers):
                continue
            needed = _needed_positions(readers, name)
            if needed is None:
                continue
            for w in writers:
                if w.guard is None:
                    cond = _from_positions(needed, w.stmt.target)
                    if cond is not None:
                        w.guard = cond
                        changed = True


def _needed_positions(readers: list[_Site], name: str) -> Expr | None:
    """The one condition (over `name`'s positions) under which every reader reads it, if they agree."""
    needed: Expr | None = None
    for r in readers:
        if r.guard is None:
            return None
        for n in walk(r.stmt.value):
            if isinstance(n, Access) and n.tensor == name:
                c = _to_positions(r.guard, n)
                if c is None or (needed is not None and c != needed):
                    return None
                needed = c
    return needed


# ---- across kernels ------------------------------------------------------------------------------


def _output_facts(kernel: KernelOp, sites: list[_Site], conds: set[Expr], values: IndexValues
                  ) -> dict[str, OffValue]:
    """Outputs stored once per element, unguarded, from a value that folds to a constant where one mask
    condition fails: what a reader may assume outside that condition. None where a guarded reduction may
    have an empty line (its max -inf, its sum 0: the store's folding to a constant would not hold there)."""
    facts: dict[str, OffValue] = {}
    if any(s.guard is not None and s.stmt.op in _IDENTITY and not _every_line_live(s.guard, s, values)
           for s in sites):
        return facts
    for decl in kernel.outputs:
        writers = [s for s in sites if s.stmt.target.tensor == decl.name]
        if len(writers) != 1:
            continue
        site = writers[0]
        stmt, rank = site.stmt, decl.type.rank
        names = _plain(stmt.target)
        if (stmt.op != "=" or site.guard is not None or names is None or len(names) != rank
                or sorted(names) != sorted(loop.var for loop in site.loops)):
            continue  # not one store per element under exactly its own loops
        candidates = {c for c in conds if any(n == c for n in walk(stmt.value))}
        if len(candidates) != 1:
            continue
        (cond,) = candidates
        off = _fold(rewrite(stmt.value, lambda e, cond=cond: BoolLit(False) if e == cond else None))
        live = _to_positions(cond, stmt.target)
        if isinstance(off, FloatLit | IntLit) and live is not None:
            facts[decl.name] = OffValue(live, float(off.value))
    return facts


def _check_rows(sites: list[_Site], substituted: list[Expr], known: dict[str, OffValue],
                values: IndexValues) -> None:
    """A reduction over scores that are -inf off a condition is finite only on lines with a live score;
    a line masked off entirely would make `exp(s - max)` NaN, not 0 (and an additive mask of the dtype's
    lowest value gives such a line equal weights, not zeros). So every line a reduction reads must keep a
    live point, else the kernel stays dense."""
    for site, value in zip(sites, substituted, strict=True):
        if site.stmt.op not in _IDENTITY:  # a reduction along the line: a max, or a sum of exp without one
            continue
        for n in walk(value):
            if not (isinstance(n, Call) and n.func == "select" and isinstance(n.args[1], Access)
                    and n.args[1].tensor in known and _is(n.args[2], -math.inf)):
                continue
            if not _every_line_live(n.args[0], site, values):
                raise _Dense(n.args[1].tensor, f"a line of the masked {n.args[1].tensor} may hold no live point")


def _every_line_live(cond: Expr, site: _Site, values: IndexValues) -> bool:
    """Whether, at every point of the loops the target keeps, some point of the reduced loops meets `cond`."""
    names = dict(values.names)
    names.update({"%" + loop.var: f"x{k}" for k, loop in enumerate(site.loops)})
    idx = ", ".join(f"x{k}" for k in range(len(site.loops)))
    try:
        bounds = " and ".join(f"{isl_expr(loop.lower, names)} <= x{k} < {isl_expr(loop.upper, names)}"
                              for k, loop in enumerate(site.loops)) or "true"
        domain = isl.Set(f"{values.prefix}{{ [{idx}] : {bounds} }}")
        live = isl.Set(f"{values.prefix}{{ [{idx}] : {bounds} and {_cond_text(cond, names)} }}")
    except (UnsupportedForISL, KeyError, isl.Error):
        return False
    kept = {i.name for i in site.stmt.target.indices if isinstance(i, IndexRef)}
    for k in reversed(range(len(site.loops))):
        if site.loops[k].var not in kept:
            domain = domain.project_out(isl.dim_type.set, k, 1)
            live = live.project_out(isl.dim_type.set, k, 1)
    return domain.is_subset(live)


def _cond_text(cond: Expr, names: dict[str, str]) -> str:
    """A condition `_constraint_expr` built (comparisons joined by `and`) as ISL text."""
    if isinstance(cond, BoolLit):
        return "true" if cond.value else "false"
    if isinstance(cond, Binary) and cond.op == "and":
        return f"({_cond_text(cond.lhs, names)}) and ({_cond_text(cond.rhs, names)})"
    if isinstance(cond, Binary) and cond.op in ("<=", "<", ">=", ">", "=="):
        op = "=" if cond.op == "==" else cond.op
        return f"{isl_expr(cond.lhs, names)} {op} {isl_expr(cond.rhs, names)}"
    raise UnsupportedForISL(f"condition {cond}")


def restrict_to_used_points(kernels: list[KernelOp], users: dict[Value, list[KernelOp | None]]) -> int:
    """Backward, from the last kernel to the first: an output that every reader uses only under one
    condition (under an `affine.if`, or as the chosen side of a `select`) is computed only there, as the
    scores Q·Kᵀ eager attention masks afterwards. `users` lists each result's readers (None for a reader
    that is not a kernel, a return among them). Returns how many statements it guarded."""
    guarded = 0
    for kernel in reversed(kernels):
        try:
            sites = _sites(kernel.body, [])
        except TypeError:  # a statement this analysis does not model
            continue
        for decl, result in zip(kernel.outputs, kernel.results, strict=True):
            needed = _needed_by_all(result, users.get(result, []))
            if needed is None or any(_reads(site.stmt.value, decl.name) for site in sites):
                continue  # an output the kernel reads back may be needed at more points than its readers use
            for site in sites:
                if site.stmt.target.tensor == decl.name and site.guard is None:
                    site.guard = _from_positions(needed, site.stmt.target)
        _liveness(sites, {d.name for d in kernel.locals()})
        for site in sites:
            if site.guard is not None:
                guarded += 1
                cond = site.guard
                site.stmt.value = _fold(rewrite(site.stmt.value, lambda e, c=cond: BoolLit(True) if e == c else None))
                k = next(i for i, s in enumerate(site.parent) if s is site.stmt)
                site.parent[k] = AffineIf(cond, [site.stmt], site.stmt.loc)
    return guarded


def _needed_by_all(result: Value, readers: list[KernelOp | None]) -> Expr | None:
    needed: Expr | None = None
    for reader in readers:
        if reader is None:
            return None
        for b in reader.inputs:
            if b.value is not result:
                continue
            cond = _used_only_under(reader, b.name)
            if cond is None or (needed is not None and cond != needed):
                return None
            needed = cond
    return needed


def _used_only_under(kernel: KernelOp, name: str) -> Expr | None:
    """The one condition (over the positions of input `name`) outside which `kernel` ignores its value."""
    try:
        _sites(kernel.body, [])
    except TypeError:
        return None  # a statement this analysis does not model may read it anywhere
    needed: Expr | None = None
    for stmt, guard in _assigns_with_guards(kernel.body, None):
        chosen = {id(n): s.args[0] for s in walk(stmt.value) if isinstance(s, Call) and s.func == "select"
                  and len(s.args) == 3 for n in walk(s.args[1])}
        for n in walk(stmt.value):
            if not (isinstance(n, Access) and n.tensor == name):
                continue
            cond = chosen.get(id(n), guard)
            if cond is not None and any(isinstance(c, Access | Call) for c in walk(cond)):
                cond = guard  # a condition on data (a padding mask): no set of positions, only the guard
            at = _to_positions(cond, n) if cond is not None else None
            if at is None or (needed is not None and at != needed):
                return None
            needed = at
    return needed


def _assigns_with_guards(body: list[KStmt], guard: Expr | None) -> list[tuple[Assign, Expr | None]]:
    out: list[tuple[Assign, Expr | None]] = []
    for s in body:
        if isinstance(s, AffineFor):
            out += _assigns_with_guards(s.body, guard)
        elif isinstance(s, AffineIf):
            out += _assigns_with_guards(s.body, s.cond)
        elif isinstance(s, Assign):
            out.append((s, guard))
    return out
