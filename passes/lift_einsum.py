"""--lift-einsum: rewrites every liftable kernel into a chain of `solar.einsum` ops with exact counts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import islpy as isl

from solar.ir import attr_names
from solar.ir import expr as ex
from solar.ir.analysis import subscript_facts as facts
from solar.ir.analysis.counts import einsum_counts
from solar.ir.analysis.dependences import always_before, ever_before, same_iteration, touching
from solar.ir.analysis.index_values import IndexValues
from solar.ir.analysis.isl_model import KernelModel, StatementModel, UnsupportedForISL, build_model
from solar.ir.analysis.mask_domains import OffValue, restrict_masked_domains, restrict_to_used_points
from solar.ir.einsum_spec import affine_subscript
from solar.ir.expr import Expr, format_expr, linear_form, rewrite, walk
from solar.ir.expr_visitor import ExprVisitor
from solar.ir.ops import (
    AffineFor,
    AffineIf,
    Assign,
    Binding,
    EinsumOp,
    EinsumStmt,
    FuncOp,
    KernelOp,
    KStmt,
    ModuleOp,
    Op,
    SliceEntry,
    SliceOp,
    SymbolRef,
    TensorDecl,
    Value,
)
from solar.ir.pass_manager import Pass, PassContext
from solar.ir.rewriter import NameGenerator, Rewriter, blocks, erase_dead, uses_of
from solar.ir.types import Dim, TensorType, canonical_dim, dims_equal, format_dim

_LETTERS = "ijklmnopqrstuvwxyzabcdefghIJKLMNOPQRSTUVWXYZABCDEFGH"
_COMBINE = {"add": "+", "mul": "*"}


class Unliftable(Exception):
    """Why a kernel stays a loop nest (reported as a remark on the kernel)."""


@dataclass(frozen=True)
class LiftEinsum(Pass):
    """Rewrites each kernel into `solar.einsum` ops, one per statement (a softmax kernel becomes the chain
    max → sum of exp → divide), marked with the kernel they came from; a kernel that cannot lift stays as it
    is with a remark saying why. Every einsum gets its exact counts as attributes.

    Before:
        %y = solar.kernel @mm(%a as A, %b as B) -> (C: tensor<64x64xf32>) {
          affine.for %i = 0 to 64 { affine.for %j = 0 to 64 { affine.for %k = 0 to 32 {
            C[%i, %j] += A[%i, %k] * B[%k, %j] } } } }
    After:
        %y = solar.einsum @mm "ik,kj->ij" (%a as A, %b as B) -> (C: tensor<64x64xf32>)
               attributes {kernel = @mm, counts = {points = 131072, macs = 131072, ...}} {
          C += A * B
        }
    """

    name = "lift-einsum"
    summary = "Rewrite liftable kernels into solar.einsum chains, with exact FLOP and byte counts"
    counts: bool = True

    def apply(self, ctx: PassContext, module: ModuleOp) -> None:
        params = [p.name for p in module.params]
        values = module.param_values()
        for func in module.funcs:
            _masks_as_where_clauses(ctx, func, params)
            names = _Names(NameGenerator.values_of(func), NameGenerator.symbols_of(func, (KernelOp, EinsumOp)))
            for block in list(blocks(func)):
                rewriter = Rewriter(block.ops, track_uses=True)
                while rewriter.index < len(block.ops):
                    op = block.ops[rewriter.index]
                    if not isinstance(op, KernelOp):
                        rewriter.index += 1
                        continue
                    lifter: _Lifter | None = None
                    try:
                        if block.in_loop:
                            raise Unliftable("it is inside a solar.for (einsums have no loop-carried index)")
                        model = build_model(op, params, {})
                        lifter = _Lifter(op, model, names, params)
                        einsums, finals = lifter.lift()
                    except (Unliftable, UnsupportedForISL) as why:
                        if lifter is not None:
                            for name in lifter.taken:  # the names of a failed lift are free again
                                names.values.release(name)
                        ctx.diagnostics.remark(f"kernel @{op.symbol} stays a loop nest: {why}", op.loc)
                        op.attrs[attr_names.NOT_LIFTED] = str(why)
                        rewriter.index += 1
                        continue
                    if self.counts and all(p.default is not None for p in module.params):
                        for e in einsums:
                            if isinstance(e, EinsumOp):
                                e.attrs[attr_names.COUNTS] = einsum_counts(e, params, values).as_attr()
                    for old, new in zip(op.results, finals, strict=True):
                        names.values.release(new.name)
                        new.name = old.name  # the kernel's result keeps its name for readers of the IR
                    if len(einsums) > 1 or not einsums:
                        names.symbols.release(op.symbol)  # its einsums are @kernel.0, @kernel.1 ...
                    rewriter.replace_op(op, einsums, finals)


def _masks_as_where_clauses(ctx: PassContext, func: FuncOp, params: list[str]) -> None:
    """Kernels that read masks computed from index comparisons iterate only over the live points (causal,
    sliding window); the mask computations nothing reads any more are dropped. Runs over the whole
    function before lifting, while the masks' producers are still kernels."""
    values = IndexValues(params)
    dropped: list[Value] = []
    facts: dict[Value, OffValue] = {}  # tensors constant off a mask condition (masked scores, probabilities)
    for block in blocks(func):
        for op in block.ops:
            if not isinstance(op, KernelOp):
                continue
            before = {b.name: b.value for b in op.inputs}
            known = {b.name: facts[b.value] for b in op.inputs if b.value in facts}
            outcome = restrict_masked_domains(op, values, known)
            outputs = [d.name for d in op.outputs]
            facts.update({op.results[outputs.index(name)]: fact for name, fact in outcome.facts.items()})
            dropped += [before[name] for name in outcome.applied]
            for tensor, why in outcome.dense:
                ctx.diagnostics.remark(f"kernel @{op.symbol} counts every point of mask {tensor}: {why}", op.loc)
    if facts:  # and back: the masked scores are computed (Q·Kᵀ, scaled, capped) only where they are used
        kernels = [op for block in blocks(func) for op in block.ops if isinstance(op, KernelOp)]
        users = {v: [op if isinstance(op, KernelOp) else None for op, _ in reads]
                 for v, reads in uses_of(func.regions[0]).items()}
        restrict_to_used_points(kernels, users)
    if dropped:
        erase_dead(func, dropped)


@dataclass
class _Context:
    """Where an assignment sits: its loops and guards, outermost first."""

    loops: list[AffineFor]
    guards: list[Expr]


def _assignments(body: list[KStmt], loops: list[AffineFor], guards: list[Expr]) -> list[tuple[Assign, _Context]]:
    out: list[tuple[Assign, _Context]] = []
    for s in body:
        if isinstance(s, AffineFor):
            out += _assignments(s.body, [*loops, s], guards)
        elif isinstance(s, AffineIf):
            out += _assignments(s.body, loops, [*guards, s.cond])
        elif isinstance(s, Assign):
            out.append((s, _Context(loops, guards)))
    return out


@dataclass
class _Names:
    """The SSA names and symbols taken in the function, shared by every kernel's lifter (taking them anew per
    kernel walked the whole function 650 times for a ResNet-101)."""

    values: NameGenerator
    symbols: NameGenerator


class _Lifter:
    def __init__(self, kernel: KernelOp, model: KernelModel, names: _Names, params: list[str]) -> None:
        self.kernel = kernel
        self.params = set(params)  # where-clauses may name them (`j<=CONTEXT`); subscripts may not
        self.model = model
        self.tensors = kernel.tensors()
        self.inputs = {b.name: b.value for b in kernel.inputs}
        self.versions: dict[str, Value] = {}
        self.writers: dict[str, list[StatementModel]] = {}
        self.names = names.values
        self.taken: list[str] = []  # the SSA names this lift took
        self.symbols = names.symbols
        self.einsums: list[EinsumOp] = []
        self.views: dict[EinsumOp, list[Op]] = {}  # slices an einsum reads (the part of an operand it reads)
        self.filled: dict[str, bool] = {}  # tensors zero-filled whole by a statement that no einsum keeps

    def lift(self) -> tuple[list[Op], list[Value]]:
        stmts = _assignments(self.kernel.body, [], [])
        assert len(stmts) == len(self.model.statements)
        for (assign, ctx), sm in zip(stmts, self.model.statements, strict=True):
            if any(lp.step != 1 for lp in ctx.loops):
                raise Unliftable("a loop has a step other than 1")
            self._statement(assign, ctx, sm)
        for e in self.einsums:
            if not e.inputs:  # subscripts cannot say "no operand": `->ij` is one rank-0 operand
                raise Unliftable(f"`{format_expr(e.body[0].value)}` fills {e.outputs[0].name} with no operand "
                                 "to read (an einsum needs one)")
        finals = []
        for out in self.kernel.outputs:
            if out.name not in self.versions:
                raise Unliftable(f"output {out.name} is never written")
            finals.append(self.versions[out.name])
        if len(self.einsums) == 1:
            self.einsums[0].symbol = self.kernel.symbol
        for k, e in enumerate(self.einsums):
            e.attrs[attr_names.KERNEL] = SymbolRef(self.kernel.symbol)
            if "fp32_precision" in self.kernel.attrs:  # how the framework runs the kernel's contractions
                e.attrs["fp32_precision"] = self.kernel.attrs["fp32_precision"]
            # The report by source line shows the frame and the module path; the order stays named.
            for kept in (attr_names.LIBRARY_FRAME, attr_names.MODULE_PATH, attr_names.EINSUM_ORDER):
                if kept in self.kernel.attrs:
                    e.attrs[kept] = self.kernel.attrs[kept]
            e.src_loc = self.kernel.src_loc
            e.loc = self.kernel.loc
            if len(self.einsums) > 1:
                e.symbol = self.symbols.fresh(f"{self.kernel.symbol}.{k}")
        return [op for e in self.einsums for op in [*self.views.get(e, []), e]], finals

    def _fresh(self, hint: str) -> str:
        name = self.names.fresh(hint.lower())
        self.taken.append(name)
        return name

    # ---- one statement ---------------------------------------------------------------------------
    def _statement(self, assign: Assign, ctx: _Context, sm: StatementModel) -> None:
        target = assign.target.tensor
        self._check_domain(assign, ctx, sm)
        self._check_reads(sm)
        prior = self.versions.get(target)
        if prior is None and assign.reduction is None and _is_identity(assign.value, self._reduction_of(target)):
            # `C = 0` before `C += ...`: the buffer starts at the reduction's identity anyway
            self.filled[target] = _is_zero(assign.value) and self._covers(target, sm)
            return
        for w in self.writers.get(target, []):
            if not self.model.remember(("writes in order", w.name, sm.name),
                                       lambda w=w: always_before(touching(w.write, sm.write), w, sm)):
                raise Unliftable(f"the writes to {target} at line {assign.loc.line} interleave with earlier ones")
        if assign.reduction is None:
            if not (facts.injective(assign.target, sm.loops)
                    or self.model.remember(("injective", sm.name), sm.write.is_injective)):
                raise Unliftable(f"`{format_expr(assign.target)}` is assigned more than once by one statement")
            if prior is not None and not self._covers(target, sm):
                if not self._drop_zero_fill(prior):
                    raise Unliftable(f"the statement at line {assign.loc.line} overwrites only part of {target}")
                self.filled[target] = any(self._covers(target, w) for w in self.writers.get(target, []))
                prior = None
        result = self._einsum(assign, ctx, sm)
        if self.filled.pop(target, False) and not self._covers(target, sm):
            # the zeros the fill wrote where this statement does not are part of the result, written too
            self.einsums[-1].attrs[attr_names.ZERO_FILLED] = True
        if assign.reduction is not None and prior is not None:
            result = self._combine(target, prior, result, assign.reduction)
        self.versions[target] = result
        self.writers.setdefault(target, []).append(sm)

    def _reduction_of(self, tensor: str) -> str | None:
        return next((s.stmt.reduction for s in self.model.statements
                     if s.stmt.target.tensor == tensor and s.stmt.reduction is not None), None)

    def _check_domain(self, assign: Assign, ctx: _Context, sm: StatementModel) -> None:
        """What the einsum form assumes of a statement: accesses in bounds (an einsum reads 0 outside an
        operand), indices from 0 up, every loop index in some subscript (else its repetitions are lost)."""
        for position, access in enumerate([assign.target, *sm.accesses]):
            if not self.model.in_bounds(sm, position):
                raise Unliftable(f"`{format_expr(access)}` at line {access.loc.line} is out of bounds "
                                 "(--lift-affine reports where)")
        subscripted = {i.name for a in [assign.target, *sm.accesses] for e in a.indices
                       for i in walk(e) if isinstance(i, ex.IndexRef)}
        # Checked even for an empty domain (a zero-trip loop): an einsum names only subscripted indices.
        for loop in ctx.loops:
            if loop.var not in subscripted:
                raise Unliftable(f"loop index %{loop.var} appears in no subscript (an einsum would lose its "
                                 "repetitions)")
        if facts.never_negative(sm.loops) or self.model.remember(("empty", sm.name), sm.domain.is_empty):
            return
        for k, loop in enumerate(ctx.loops):
            if self.model.remember(("negative", sm.name, k), lambda k=k: sm.domain.dim_min_val(k).is_neg()):
                raise Unliftable(f"loop index %{loop.var} takes negative values (einsum indices start at 0)")

    def _drop_zero_fill(self, prior: Value) -> bool:
        """A buffer zero-filled and then partly overwritten (a causal mask) is the overwrite alone: result
        elements no iteration point reaches are 0. Drops the fill when nothing else read it."""
        fill = prior.owner
        if not (isinstance(fill, EinsumOp) and fill in self.einsums and fill.body[0].op == "="
                and isinstance(fill.body[0].value, ex.IntLit | ex.FloatLit) and fill.body[0].value.value == 0):
            return False
        if any(b.value is prior for e in self.einsums for b in e.inputs):
            return False
        self.einsums.remove(fill)
        return True

    def _covers(self, tensor: str, sm: StatementModel) -> bool:
        return (facts.covers(sm.stmt.target, sm.loops, bool(sm.guards), self.tensors[tensor].shape)
                or self.model.remember(("covers", tensor, sm.name),
                                       lambda: self.model.boxes[tensor].is_subset(sm.write.range())))

    def _check_reads(self, sm: StatementModel) -> None:
        for position, access in enumerate(sm.accesses):
            name = access.tensor
            if name in self.inputs:
                continue
            if name not in self.versions:
                raise Unliftable(f"{name} is read at line {access.loc.line} before anything is written to it")
            for w in self.model.statements:
                if w.stmt.target.tensor != name or same_iteration(w, w.stmt.target, sm, access):
                    continue  # (in the same iteration, the earlier statement in the kernel runs first)
                question = (w.name, sm.name, position)  # asked of every kernel of this structure: answered once
                pairs = self.model.remember(("touching", *question),
                                            lambda w=w, k=position: _unless_empty(touching(w.write, sm.isl.reads[k])))
                if pairs is None:
                    continue
                earlier = self.model.statements.index(w) < self.model.statements.index(sm)
                if earlier and not self._answer(always_before, pairs, w, sm, question):
                    raise Unliftable(f"`{format_expr(access)}` at line {access.loc.line} reads {name} before "
                                     "all of its writes are done")
                if not earlier and w is not sm and self._answer(ever_before, pairs, w, sm, question):
                    raise Unliftable(f"`{format_expr(access)}` at line {access.loc.line} reads {name} after a "
                                     "later statement overwrote it")

    def _answer(self, test: Callable[[isl.Map, StatementModel, StatementModel], bool], pairs: isl.Map,
                w: StatementModel, sm: StatementModel, question: tuple[str, str, int]) -> bool:
        return self.model.remember((test.__name__, *question), lambda: test(pairs, w, sm))

    # ---- building einsums ------------------------------------------------------------------------
    def _einsum(self, assign: Assign, ctx: _Context, sm: StatementModel) -> Value:
        letters = _letters([lp.var for lp in ctx.loops], self.params)
        operands: list[tuple[ex.Access, str, Value]] = []
        names: dict[tuple[str, tuple[Expr, ...]], str] = {}
        used_names = {assign.target.tensor}
        for access in (a for a in walk(assign.value) if isinstance(a, ex.Access)):
            key = (access.tensor, access.indices)
            if key in names:
                continue
            bind = access.tensor
            n = 0
            while bind in used_names:
                n += 1
                bind = f"{access.tensor}_{n}"
            used_names.add(bind)
            names[key] = bind
            source = self.inputs.get(access.tensor) or self.versions[access.tensor]
            operands.append((access, bind, source))
        terms = [_term(a.indices, letters) for a, _, _ in operands]
        out_term = _term(assign.target.indices, letters)
        spec = ",".join(terms) + "->" + out_term
        shapes: list[tuple[Dim, ...]] = [self._type_of(src).shape for _, _, src in operands]
        shapes.append(self.tensors[assign.target.tensor].shape)
        views = self._narrow(assign, ctx, operands, shapes)
        operands = [(a, bind, view.results[0] if view is not None else src)
                    for (a, bind, src), view in zip(operands, views, strict=True)]
        shapes[:-1] = [self._type_of(src).shape for _, _, src in operands]
        where = self._where(ctx, sm, letters, [*[a.indices for a, _, _ in operands], assign.target.indices], shapes)

        def reads(e: Expr) -> Expr | None:
            return ex.NameRef(names[(e.tensor, e.indices)], e.loc) if isinstance(e, ex.Access) else None

        def index_values(e: Expr) -> Expr | None:
            if isinstance(e, ex.IndexRef):
                if e.name not in letters:
                    raise Unliftable(f"`%{e.name}` is not a loop index of this statement")
                return ex.IndexRef(letters[e.name], e.loc)
            return None

        # Reads first: `rewrite` works bottom-up, so renaming indices first would change the reads' keys.
        value = rewrite(rewrite(assign.value, reads), index_values)
        target = assign.target.tensor
        decl = TensorDecl(target, self.tensors[target], assign.loc)
        op = EinsumOp(self.kernel.symbol, spec, [Binding(src, bind) for _, bind, src in operands], [decl],
                      [EinsumStmt(target, assign.op, value, assign.loc)], where, assign.loc)
        op.results = [Value(self._fresh(target), decl.type, op, assign.loc)]
        self.einsums.append(op)
        self.views[op] = [v for v in views if v is not None]
        return op.results[0]

    def _narrow(self, assign: Assign, ctx: _Context, operands: list[tuple[ex.Access, str, Value]],
                shapes: list[tuple[Dim, ...]]) -> list[SliceOp | None]:
        """Operands read only in part along a dimension where a loop index stands alone (`X[i]`, i < 8, of
        a 16-element X): an einsum gives an index one extent, so each such operand is read through a slice
        (a view: no work, and the footprint it had) cut to the loop's bound. A result written only in part
        where an operand is read whole cannot be cut: the kernel stays a loop nest."""
        terms = [*[a.indices for a, _, _ in operands], assign.target.indices]
        cuts: dict[int, dict[int, Dim]] = {}
        for loop in ctx.loops:
            places = [(k, d, dim) for k, (term, shape) in enumerate(zip(terms, shapes, strict=True))
                      for d, (entry, dim) in enumerate(zip(term, shape, strict=True))
                      if isinstance(entry, ex.IndexRef) and entry.name == loop.var]
            if all(dims_equal(dim, places[0][2]) for _, _, dim in places):
                continue
            highs = _parts(loop.upper, "min")
            if len(highs) != 1 or not _index_free(highs[0]):
                raise Unliftable(f"loop index %{loop.var} stands for dimensions of different sizes and its bound "
                                 f"`{format_expr(loop.upper)}` is not one size to read them at")
            bound = _dim_of(highs[0])
            for k, d, dim in places:
                if dims_equal(dim, bound):
                    continue
                name = assign.target.tensor if k == len(operands) else operands[k][0].tensor
                if k == len(operands) or (isinstance(dim, int) and isinstance(bound, int) and dim < bound):
                    raise Unliftable(f"{name} has dimension {format_dim(dim)} where loop index %{loop.var} runs to "
                                     f"{format_dim(bound)}, and other tensors differ there (an einsum gives an "
                                     "index one extent)")
                cuts.setdefault(k, {})[d] = bound
        views: list[SliceOp | None] = []
        for k, (_, bind, src) in enumerate(operands):
            if k not in cuts:
                views.append(None)
                continue
            t = self._type_of(src)
            shape = tuple(cuts[k].get(d, dim) for d, dim in enumerate(t.shape))
            entries = [SliceEntry(start=ex.IntLit(0), stop=_dim_expr(dim)) for dim in shape]
            view = SliceOp(src, entries, TensorType(shape, t.dtype), assign.loc)
            view.results = [Value(self._fresh(f"{bind}_part"), view.type, view, assign.loc)]
            views.append(view)
        return views

    def _combine(self, target: str, prior: Value, partial: Value, reduction: str) -> Value:
        t = self.tensors[target]
        letters = _LETTERS[:t.rank]
        spec = f"{letters},{letters}->{letters}"
        p, r = ("P", "R") if target not in ("P", "R") else ("P_0", "R_0")  # never the result's name
        value = _combine_expr(reduction, ex.NameRef(p), ex.NameRef(r))
        loc = self.kernel.loc  # the combine has no statement of its own: diagnostics point at the kernel
        decl = TensorDecl(target, t, loc)
        op = EinsumOp(self.kernel.symbol, spec, [Binding(prior, p, loc), Binding(partial, r, loc)], [decl],
                      [EinsumStmt(target, "=", value, loc)], None, loc)
        op.results = [Value(self._fresh(target), t, op, loc)]
        self.einsums.append(op)
        return op.results[0]

    def _type_of(self, value: Value) -> TensorType:
        assert value.type is not None
        return value.type

    def _where(self, ctx: _Context, sm: StatementModel, letters: dict[str, str], terms: list[tuple[Expr, ...]],
               shapes: list[tuple[Dim, ...]]) -> str | None:
        # What a dimension gives each index that stands alone in it; bounds that differ become constraints.
        extent: dict[str, Dim] = {}
        for term, shape in zip(terms, shapes, strict=True):
            for entry, dim in zip(term, shape, strict=True):
                if isinstance(entry, ex.IndexRef) and entry.name not in extent:
                    extent[entry.name] = dim
        constraints: list[str] = []
        for k, loop in enumerate(ctx.loops):
            v = letters[loop.var]
            lows = _parts(loop.lower, "max")
            highs = _parts(loop.upper, "min")
            for lo in lows:
                if linear_form(lo) != ((), 0):
                    constraints.append(f"{v}>={_affine_text(lo, letters, self.params)}")
            known = extent.get(loop.var)
            for hi in highs:
                if known is not None and dims_equal(known, _dim_of(hi)):
                    continue
                constraints.append(f"{v}<{_affine_text(hi, letters, self.params)}")
            if known is None and not any(_index_free(hi) for hi in highs):
                # No dimension and no constant bound gives the index a range (`j < i + 1` with `X[i - j]`):
                # state its largest value over the statement's domain.
                top = sm.domain.dim_max_val(k)
                if not top.is_int():
                    raise Unliftable(f"the range of loop index %{loop.var} is not a constant")
                constraints.append(f"{v}<{top.to_python() + 1}")
        for guard in ctx.guards:
            constraints += _guard_texts(guard, letters, self.params)
        return ",".join(constraints) if constraints else None


_IDENTITY = {"add": 0.0, "mul": 1.0, "max": float("-inf"), "min": float("inf")}


class _Number(ExprVisitor[int | float | None]):
    """The number a literal, or a negated literal, stands for; None for any other expression."""

    def visit_int_lit(self, e: ex.IntLit | ex.FloatLit) -> int | float | None:
        return e.value

    visit_float_lit = visit_int_lit

    def visit_unary(self, e: ex.Unary) -> int | float | None:
        return -e.operand.value if e.op == "-" and isinstance(e.operand, ex.IntLit | ex.FloatLit) else None

    def visit_other(self, e: Expr) -> int | float | None:
        return None


_NUMBER = _Number()


def _is_identity(value: Expr, reduction: str | None) -> bool:
    """Whether `value` is a literal equal to the identity of `reduction` (0 for add, -inf for max, ...)."""
    if reduction is None:
        return False
    literal = _NUMBER.visit(value)
    return literal is not None and literal == _IDENTITY[reduction]


def _unless_empty(rel: isl.Map) -> isl.Map | None:
    return None if rel.is_empty() else rel


def _is_zero(value: Expr) -> bool:
    return _NUMBER.visit(value) == 0


def _combine_expr(reduction: str, a: Expr, b: Expr) -> Expr:
    if reduction in _COMBINE:
        return ex.Binary(_COMBINE[reduction], a, b)
    return ex.Call(reduction, (a, b))


def _parts(expr: Expr, combiner: str) -> tuple[Expr, ...]:
    return expr.args if isinstance(expr, ex.Call) and expr.func == combiner else (expr,)


def _index_free(expr: Expr) -> bool:
    """A bound in constants and size parameters only (`8`, `CONTEXT + 1`): it gives an index its range."""
    return not any(isinstance(n, ex.IndexRef) for n in walk(expr))


def _dim_of(expr: Expr) -> Dim:
    return canonical_dim(expr)


def _dim_expr(dim: Dim) -> Expr:
    return ex.IntLit(dim) if isinstance(dim, int) else dim


def _letters(loop_vars: list[str], params: set[str]) -> dict[str, str]:
    """One einsum letter per loop index: its own name when that is a single free letter. A one-letter size
    parameter (`W`) is never a letter, so a where-clause can name it."""
    letters: dict[str, str] = {}
    taken: set[str] = {p for p in params if len(p) == 1}
    for var in loop_vars:
        if len(var) == 1 and var.isalpha() and var not in taken:
            letters[var] = var
            taken.add(var)
    for var in loop_vars:
        if var not in letters:
            free = next((c for c in _LETTERS if c not in taken), None)
            if free is None:
                raise Unliftable("more than 52 loop indices")
            letters[var] = free
            taken.add(free)
    return letters


def _term(indices: tuple[Expr, ...], letters: dict[str, str]) -> str:
    parts = []
    for e in indices:
        if isinstance(e, ex.IndexRef) and e.name in letters:
            parts.append(letters[e.name])
        else:
            parts.append("(" + _affine_text(e, letters) + ")")
    return "".join(parts)


def _affine_text(expr: Expr, letters: dict[str, str], sizes: set[str] | frozenset[str] = frozenset()) -> str:
    """An affine index expression in subscript notation: `2p+r-1`; in a where-clause (`sizes` given) it may
    name those size parameters: `i+W`."""
    form = linear_form(expr)
    if form is None:
        raise Unliftable(f"index `{format_expr(expr)}` is not a linear combination of loop indices")
    for name, _ in form[0]:
        if name not in sizes and (not name.startswith("%") or name[1:] not in letters):
            raise Unliftable(f"index `{format_expr(expr)}` depends on `{name}`, which subscripts cannot name")
    return affine_subscript(*form, lambda name: None if name in sizes else letters[name[1:]])


def _guard_texts(cond: Expr, letters: dict[str, str], sizes: set[str]) -> list[str]:
    if isinstance(cond, ex.Binary) and cond.op == "and":
        return _guard_texts(cond.lhs, letters, sizes) + _guard_texts(cond.rhs, letters, sizes)
    assert isinstance(cond, ex.Binary)
    return [f"{_affine_text(cond.lhs, letters, sizes)}{cond.op}{_affine_text(cond.rhs, letters, sizes)}"]
