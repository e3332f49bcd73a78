"""SIR kernels and einsums → Python source compiled by Numba.

The generated source is *canonical*: tensors are `t0, t1, ...` (inputs, outputs, locals in that order), loop
indices `i0, i1, ...` in order of appearance, enclosing `solar.for` indices `s0, ...`, and the function is
always called `kernel`. Two kernels that differ only in names therefore produce the same text, and the text
(with the argument types) is the compile-cache key.

Semantics follow docs/ir.md ("Execution semantics and dtypes"):
- statements run in program order; the outermost loop of a nest becomes `prange` only when its iterations
  touch disjoint elements of everything they write (`loop_analysis.partitions`);
- a reduction whose target does not move inside a loop is kept in a scalar across that loop (what a C
  compiler would do after proving no aliasing, which Numba cannot prove for arrays);
- floats narrower than f32 are computed in f32 and rounded at every plain store; a float buffer that is the
  target of a `+=` or `*=` reduction is an f64 accumulator for the whole kernel (`wide_accumulator`),
  rounded once when the kernel ends, so a long f32 sum is as close as PyTorch's pairwise or blocked one;
- an access that cannot be proven in bounds gets a run-time check that records the failure in `err`
  (raising inside a `prange` body would make Numba drop the parallel loop) and reads element 0 instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from solar.ir.dtypes import DType
from solar.ir.expr import (
    Access,
    Binary,
    Call,
    Cast,
    Expr,
    IndexRef,
    IntLit,
    NameRef,
    format_expr,
    free_indices,
    linear_form,
    walk,
)
from solar.ir.ops import AffineFor, AffineIf, Assign, KernelOp, KStmt

from . import loop_analysis as analysis
from .codegen_expr import (
    JIT_OPTIONS,
    MIN_PARALLEL_POINTS,
    ROUNDERS,
    BoundsCheck,
    SourceEmitter,
    TensorInfo,
    compute_class,
    literal,
)
from .dtypes import identity, is_rounded
from .loop_analysis import IntervalEnv


@dataclass
class GeneratedKernel:
    source: str  # the function only; `module_source` adds the header
    parallel: bool
    input_names: list[str]
    output_names: list[str]
    outer_indices: list[str]  # enclosing solar.for indices passed as trailing integer arguments
    output_init: list[float | int | bool | None]  # identity fill per output, None = zeros
    accumulators: list[bool]  # per output: a reduction target (rounded once at the end, not per store)
    wide: list[bool] = field(default_factory=list)  # per output: an f64 accumulator (`wide_accumulator`)
    checks: list[BoundsCheck] = field(default_factory=list)
    prange_loops: int = 0
    hoisted: int = 0
    points: float = math.inf  # an upper estimate of the statements one call executes (`_points`)



# ---- kernels ---------------------------------------------------------------------------------------


class KernelGen(SourceEmitter):
    def __init__(self, op: KernelOp, min_parallel_points: int | None = None) -> None:
        super().__init__()
        self.op = op
        self.min_parallel_points = MIN_PARALLEL_POINTS if min_parallel_points is None else min_parallel_points
        self.tensors: dict[str, TensorInfo] = {}
        reductions: dict[str, str] = {}
        for s in analysis_walk(op.body):
            if isinstance(s, Assign) and s.reduction is not None:
                reductions.setdefault(s.target.tensor, s.reduction)
        n = 0
        for b in op.inputs:
            assert b.value.type is not None
            self.tensors[b.name] = TensorInfo(f"t{n}", b.value.type, "input", None)
            n += 1
        for d in op.outputs:
            self.tensors[d.name] = TensorInfo(f"t{n}", d.type, "output", reductions.get(d.name))
            n += 1
        for d in op.locals():
            self.tensors[d.name] = TensorInfo(f"t{n}", d.type, "local", reductions.get(d.name))
            n += 1
        self.outer = _outer_indices(op.body)
        for k, name in enumerate(self.outer):
            self.loop_names[name] = f"s{k}"
        self.checks: list[BoundsCheck] = []
        self.scalar: dict[tuple[str, tuple[Expr, ...]], str] = {}  # hoisted reduction targets
        self.prange_loops = 0
        self.hoisted = 0

    def element_type(self, node: Expr) -> DType:
        assert isinstance(node, Access)
        return self.tensors[node.tensor].dtype

    def generate(self) -> GeneratedKernel:
        infos = list(self.tensors.values())
        args = [t.canon for t in infos if t.role != "local"] + [f"s{k}" for k in range(len(self.outer))] + ["err"]
        for t in infos:
            if t.role == "local":
                shape = t.shape or (1,)
                dt = t.array_dtype.name
                if t.reduction is None:
                    self.line(f"{t.canon} = np.zeros({shape!r}, dtype=np.{dt})")
                else:
                    ident = literal(identity(t.reduction, t.dtype), DType.F64 if t.wide else compute_class(t.dtype))
                    self.line(f"{t.canon} = np.full({shape!r}, {ident}, dtype=np.{dt})")
        env = IntervalEnv()
        for name in self.outer:
            env.vars["%" + name] = None
        points = _points(self.op.body, env)
        self.body(self.op.body, env, top=True)
        self.line("return 0")
        parallel = self.prange_loops > 0
        head = f"@njit({JIT_OPTIONS.format(parallel=parallel)})\ndef kernel({', '.join(args)}):\n"
        outputs = [t for t in infos if t.role == "output"]
        return GeneratedKernel(
            source=head + "\n".join(self.lines) + "\n",
            parallel=parallel,
            input_names=[b.name for b in self.op.inputs],
            output_names=[d.name for d in self.op.outputs],
            outer_indices=list(self.outer),
            output_init=[None if t.reduction is None else identity(t.reduction, t.dtype) for t in outputs],
            accumulators=[t.reduction is not None for t in outputs],
            wide=[t.wide for t in outputs],
            checks=self.checks,
            prange_loops=self.prange_loops,
            hoisted=self.hoisted,
            points=points,
        )

    # ---- statements ------------------------------------------------------------------------------
    def body(self, stmts: list[KStmt], env: IntervalEnv, chosen: AffineFor | None = None,
             top: bool = False) -> None:
        for s in stmts:
            if isinstance(s, AffineFor):
                if top:
                    small = _points([s], env) < self.min_parallel_points
                    s, chosen = _reorder_nest(s, None if small else _pick_parallel(s))
                self.loop(s, env, chosen)
            elif isinstance(s, AffineIf):
                inner = env.child()
                analysis.add_facts(s.cond, inner)
                self.line(f"if {self.condition(s.cond)}:")
                self.indent += 1
                self.block(s.body, inner, None)
                self.indent -= 1
            elif isinstance(s, Assign):
                self.assign(s, env)

    def block(self, stmts: list[KStmt], env: IntervalEnv, chosen: AffineFor | None) -> None:
        """A nested body; `pass` keeps an empty one valid Python."""
        before = len(self.lines)
        self.body(stmts, env, chosen)
        if len(self.lines) == before:
            self.line("pass")

    def loop(self, s: AffineFor, env: IntervalEnv, chosen: AffineFor | None) -> None:
        """Emits one loop; `chosen` is the loop of this perfect chain that runs as `prange` (or None)."""
        name = self.fresh("i")
        lower, upper = self.index(s.lower), self.index(s.upper)
        inner = env.child()
        inner.vars["%" + s.var] = analysis.loop_interval(s, env)
        analysis.add_bound_facts(s, inner)
        # Reduction targets that stay put across this loop live in a scalar while it runs.
        saved: list[tuple[tuple[str, tuple[Expr, ...]], str, str]] = []
        for target in self.hoistable(s):
            acc = self.fresh("a")
            self.hoisted += 1
            self.temps = {}
            self.bounds(target, env)
            element = self.element(self.tensors[target.tensor], target.indices)
            self.temps = {}
            self.line(f"{acc} = {element}")
            key = (target.tensor, target.indices)
            self.scalar[key] = acc
            saved.append((key, acc, element))
        is_parallel = chosen is s
        if is_parallel:
            self.prange_loops += 1
        self.loop_names[s.var] = name
        if is_parallel and s.step != 1:
            q = self.fresh("q")
            self.line(f"for {q} in prange(({upper} - {lower} + {s.step - 1}) // {s.step}):")
            self.indent += 1
            self.line(f"{name} = {lower} + {q} * {s.step}")
        else:
            kind = "prange" if is_parallel else "range"
            step = f", {s.step}" if s.step != 1 else ""
            self.line(f"for {name} in {kind}({lower}, {upper}{step}):")
            self.indent += 1
        self.block(s.body, inner, None if is_parallel else chosen)
        self.indent -= 1
        del self.loop_names[s.var]
        for key, acc, element in saved:
            # `element` reuses the checked index temporaries computed before the loop.
            self.line(f"{element} = {acc}")
            del self.scalar[key]

    def hoistable(self, loop: AffineFor) -> list[Access]:
        """Reduction targets whose element does not change while `loop` runs and that nothing else under the
        loop touches: they can be accumulated in a scalar (the loaded value, combined, stored back)."""
        sites = analysis.accesses(loop.body)
        moving = analysis.bound_vars(loop.body) | {"%" + loop.var}
        found: list[Access] = []
        considered: set[str] = set()
        for site in sites:
            if not site.write or site.stmt.reduction is None or site.access.tensor in considered:
                continue
            target = site.access
            considered.add(target.tensor)
            if (target.tensor, target.indices) in self.scalar:
                continue
            if any(analysis.index_vars(i) & moving for i in target.indices):
                continue
            same = [x for x in sites if x.access.tensor == target.tensor]
            if all(x.access is x.stmt.target and x.stmt.reduction == site.stmt.reduction
                   and x.access.indices == target.indices for x in same):
                found.append(target)
        return found

    def condition(self, cond: Expr) -> str:
        if isinstance(cond, Binary) and cond.op == "and":
            return f"{self.condition(cond.lhs)} and {self.condition(cond.rhs)}"
        assert isinstance(cond, Binary)
        return f"{self.index(cond.lhs)} {cond.op} {self.index(cond.rhs)}"

    def element(self, info: TensorInfo, indices: tuple[Expr, ...]) -> str:
        if not indices:
            return f"{info.canon}[0]"
        return f"{info.canon}[{', '.join(self.index(i) for i in indices)}]"

    def read(self, e: NameRef | Access) -> str:
        assert isinstance(e, Access)
        acc = self.scalar.get((e.tensor, e.indices))
        if acc is not None:
            return acc
        return self.element(self.tensors[e.tensor], e.indices)

    def bounds(self, acc: Access, env: IntervalEnv) -> None:
        """Proves each index of `acc` in range, or emits a check that records a failure in `err`."""
        info = self.tensors[acc.tensor]
        for d, (idx, size) in enumerate(zip(acc.indices, info.shape, strict=True)):
            rng = analysis.interval(idx, env)
            if rng is not None and rng[0] >= 0 and rng[1] < size:
                continue
            if id(idx) in self.temps:
                continue
            temp = self.fresh("x")
            self.checks.append(BoundsCheck(self.op.symbol, format_expr(acc), acc.tensor, d, size, acc.loc))
            self.line(f"{temp} = {self.index(idx)}")
            self.line(f"if {temp} < 0 or {temp} >= {size}:")
            self.line(f"    err[0] = {len(self.checks)}")
            self.line(f"    err[1] = {temp}")
            self.line(f"    {temp} = 0")
            self.temps[id(idx)] = temp

    def assign(self, s: Assign, env: IntervalEnv) -> None:
        self.temps = {}
        key = (s.target.tensor, s.target.indices)
        hoisted = self.scalar.get(key)
        for node in walk(s.value):
            if isinstance(node, Access) and (node.tensor, node.indices) not in self.scalar:
                self.bounds(node, env)
        if hoisted is None:
            self.bounds(s.target, env)
        info = self.tensors[s.target.tensor]
        ctx = compute_class(info.dtype)
        value = self.value(s.value, ctx)
        target = hoisted or self.element(info, s.target.indices)
        red = s.reduction
        if red is None:
            already = isinstance(s.value, Cast) and s.value.dtype == info.dtype  # the cast rounded it
            if is_rounded(info.dtype) and info.reduction is None and not already:
                value = f"{ROUNDERS[info.dtype]}({value})"
            self.line(f"{target} = {value}")
        elif red == "add":
            self.line(f"{target} += {value}")
        elif red == "mul":
            self.line(f"{target} *= {value}")
        elif info.dtype.is_bool:
            self.line(f"{target} = {target} {'or' if red == 'max' else 'and'} {value}")
        elif ctx.is_float:
            self.line(f"{target} = f{red}({target}, {value})")
        else:
            self.line(f"{target} = {red}({target}, {value})")
        self.temps = {}


def analysis_walk(body: list[KStmt]) -> list[KStmt]:
    out: list[KStmt] = []
    for s in body:
        out.append(s)
        if isinstance(s, AffineFor | AffineIf):
            out.extend(analysis_walk(s.body))
    return out


def _outer_indices(body: list[KStmt]) -> list[str]:
    """Indices used in the kernel but bound outside it (enclosing `solar.for`s), in order of appearance."""
    found: list[str] = []

    def visit(stmts: list[KStmt], bound: set[str]) -> None:
        for s in stmts:
            exprs: list[Expr] = []
            inner = bound
            if isinstance(s, AffineFor):
                exprs = [s.lower, s.upper]
                inner = bound | {s.var}
            elif isinstance(s, AffineIf):
                exprs = [s.cond]
            elif isinstance(s, Assign):
                exprs = [s.target, s.value]
            for e in exprs:
                for ref in free_indices(e):
                    if ref.name not in bound and ref.name not in found:
                        found.append(ref.name)
            if isinstance(s, AffineFor | AffineIf):
                visit(s.body, inner)

    visit(body, set())
    return found


def _trip_count(loop: AffineFor) -> int | None:
    lo, hi = linear_form(loop.lower), linear_form(loop.upper)
    if lo is None or hi is None or lo[0] or hi[0]:
        return None
    return max(0, -(-(hi[1] - lo[1]) // loop.step))


def _pick_parallel(loop: AffineFor) -> AffineFor | None:
    """The outermost loop of the perfect chain starting at `loop` that may run in parallel and has more than
    one iteration (a batch loop of size 1 gives no parallelism; the next loop may)."""
    current: AffineFor | None = loop
    while current is not None:
        trips = _trip_count(current)
        if (trips is None or trips > 1) and analysis.partitions(current):
            return current
        if len(current.body) == 1 and isinstance(current.body[0], AffineFor):
            current = current.body[0]
        else:
            return None
    return None


def _reorder_nest(root: AffineFor, chosen: AffineFor | None) -> tuple[AffineFor, AffineFor | None]:
    """Moves the loop that gives the best memory access pattern innermost, in a perfect rectangular nest whose
    only statement is one reduction, possibly under one `affine.if` (`C[i, j] += A[i, k] * B[k, j]` runs as
    i, k, j: unit stride, vectorised; a padded convolution runs its output column innermost). Guard
    constraints on the new innermost index become its loop bounds, so no branch is left in that loop.

    Legal because such a nest computes each target element from the same set of points in any loop order (a
    guard is a predicate on the point): only the order of the reduction changes, which SIR leaves open
    (docs/ir.md, execution semantics). The loop that runs in parallel and the loops outside it stay where they
    are. Returns new loop objects; the IR is unchanged.
    """
    chain = [root]
    while len(chain[-1].body) == 1 and isinstance(chain[-1].body[0], AffineFor):
        chain.append(chain[-1].body[0])
    leaf = chain[-1].body
    guard: AffineIf | None = None
    if len(leaf) == 1 and isinstance(leaf[0], AffineIf) and len(leaf[0].body) == 1:
        guard = leaf[0]
        leaf = guard.body
    if not (len(leaf) == 1 and isinstance(leaf[0], Assign) and leaf[0].reduction is not None):
        return root, chosen
    stmt = leaf[0]
    if any(isinstance(n, Access) and n.tensor == stmt.target.tensor for n in walk(stmt.value)):
        return root, chosen
    start = chain.index(chosen) + 1 if chosen in chain else 0
    movable = chain[start:]
    names = {"%" + loop.var for loop in movable}
    if len(movable) < 2 or any(analysis.index_vars(b) & names for loop in movable for b in (loop.lower, loop.upper)):
        return root, chosen
    sites = [stmt.target, *(n for n in walk(stmt.value) if isinstance(n, Access))]
    # Ties go to the longer loop (vectorising 3 iterations gains nothing), then to the current order.
    best = max(movable, key=lambda loop: (_stride_score(loop.var, sites), _trip_count(loop) or 0,
                                          loop is movable[-1]))
    if best is movable[-1] and guard is None:
        return root, chosen
    order = [*chain[:start], *(loop for loop in movable if loop is not best), best]
    lower, upper, rest = _guard_bounds(best, guard)
    body: list[KStmt] = list(leaf)
    # What remains of the guard does not involve the innermost index: test it once, outside that loop.
    outside = guard is not None and rest is not None and "%" + best.var not in analysis.index_vars(rest)
    if guard is not None and rest is not None and not outside:
        body = [AffineIf(rest, body, guard.loc)]
    rebuilt: dict[int, AffineFor] = {}
    for loop in reversed(order):
        if loop is best:
            new = AffineFor(loop.var, lower, upper, loop.step, body, loop.loc)
            rebuilt[id(loop)] = new
            body = [AffineIf(rest, [new], guard.loc)] if outside and guard is not None and rest else [new]
            continue
        new = AffineFor(loop.var, loop.lower, loop.upper, loop.step, body, loop.loc)
        rebuilt[id(loop)] = new
        body = [new]
    outermost = body[0]  # the original root may have moved inward
    assert isinstance(outermost, AffineFor)
    return outermost, rebuilt[id(chosen)] if chosen is not None else None


def _guard_bounds(loop: AffineFor, guard: AffineIf | None) -> tuple[Expr, Expr, Expr | None]:
    """The loop's bounds tightened by the guard's constraints on its index with coefficient ±1 (step 1 only),
    and what remains of the guard (None when nothing does)."""
    if guard is None:
        return loop.lower, loop.upper, None
    parts: list[Expr] = []
    stack: list[Expr] = [guard.cond]
    while stack:
        c = stack.pop()
        if isinstance(c, Binary) and c.op == "and":
            stack += [c.rhs, c.lhs]
        else:
            parts.append(c)
    key = "%" + loop.var
    lows, highs, rest = [loop.lower], [loop.upper], []
    for c in parts:
        form = linear_form(Binary("-", c.lhs, c.rhs)) if isinstance(c, Binary) else None
        coeff = dict(form[0]).get(key, 0) if form is not None else 0
        if form is None or abs(coeff) != 1 or loop.step != 1 or not isinstance(c, Binary):
            rest.append(c)
            continue
        # c is  coeff*v + others + k  OP 0;  solved for v:  v OP' bound.
        bound: Expr = IntLit(-form[1] * coeff)
        for name, v in form[0]:
            if name != key:
                term: Expr = IndexRef(name[1:]) if name.startswith("%") else NameRef(name)
                bound = Binary("+", bound, Binary("*", IntLit(-v * coeff), term))
        op = c.op if coeff == 1 else {">=": "<=", ">": "<", "<=": ">=", "<": ">", "==": "=="}[c.op]
        if op in (">=", "=="):
            lows.append(bound)
        if op == ">":
            lows.append(Binary("+", bound, IntLit(1)))
        if op in ("<=", "=="):
            highs.append(Binary("+", bound, IntLit(1)))
        if op == "<":
            highs.append(bound)
    lower = lows[0] if len(lows) == 1 else Call("max", tuple(lows))
    upper = highs[0] if len(highs) == 1 else Call("min", tuple(highs))
    remaining: Expr | None = None
    for c in rest:
        remaining = c if remaining is None else Binary("and", remaining, c)
    return lower, upper, remaining


def _stride_score(var: str, sites: list[Access]) -> float:
    """How well the accesses suit `var` as the innermost loop: an access that does not move is kept in a
    register, one that moves along its last (contiguous) dimension vectorises, any other is a strided gather."""
    key = "%" + var
    score = 0.0
    for acc in sites:
        coeffs = [dict(f[0]).get(key, 0) if (f := linear_form(i)) is not None else None for i in acc.indices]
        if all(c == 0 for c in coeffs):
            score += 1
        elif coeffs and coeffs[-1] in (1, -1) and all(c == 0 for c in coeffs[:-1]):
            score += 2
        elif coeffs and all(c == 0 for c in coeffs[:-1]):
            score += 0.5
        else:
            score -= 2
    return score


def _points(stmts: list[KStmt], env: IntervalEnv) -> float:
    """An upper estimate of the statements a nest executes (infinite when a bound is unknown)."""
    total = 0.0
    for s in stmts:
        if isinstance(s, AffineFor):
            rng = analysis.loop_interval(s, env)
            if rng is None:
                return math.inf
            inner = env.child()
            inner.vars["%" + s.var] = rng
            total += max(0, (rng[1] - rng[0]) // s.step + 1) * _points(s.body, inner)
        elif isinstance(s, AffineIf):
            total += _points(s.body, env)
        elif isinstance(s, Assign):
            total += 1
    return total


def generate_kernel(op: KernelOp, min_parallel_points: int | None = None) -> GeneratedKernel:
    """`min_parallel_points`: nests that execute fewer statements stay serial (default MIN_PARALLEL_POINTS)."""
    return KernelGen(op, min_parallel_points).generate()

