"""The verifier: every structural, type and affinity rule of docs/ir.md, reporting all errors in one run."""

from __future__ import annotations

from typing import Any

from .diagnostics import DiagnosticEngine, Location, note
from .dtypes import DType
from .einsum_spec import EinsumSpec, SpecError, index_ranges, parse_spec, parse_where
from .expr import (
    COMPARISONS,
    Binary,
    Call,
    Expr,
    IndexRef,
    affine_violation,
    format_expr,
    free_indices,
    free_names,
)
from .ops import (
    AffineFor,
    AffineIf,
    Assign,
    CallOp,
    ConstantOp,
    EinsumOp,
    ForOp,
    FuncOp,
    GenericOp,
    GroupOp,
    IfOp,
    InsertOp,
    KernelOp,
    KStmt,
    LocalDecl,
    ModuleOp,
    Op,
    ReturnOp,
    SliceOp,
    TensorDecl,
    TerminatorOp,
    Value,
    YieldOp,
    result_types_of,
)
from .scalar_types import ScalarTypes
from .shape_inference import ShapeInference
from .types import PARAM_NAME, TensorType, dims_equal, format_dim, types_equal
from .verify_base import (
    EType,
    KernelScope,
    dim_value,
    literal_fits,
    suggest,
)


def verify(module: ModuleOp, diagnostics: DiagnosticEngine) -> bool:
    """Checks `module`, adding every problem to `diagnostics`; True when no error was found."""
    before = sum(d.severity == "error" for d in diagnostics.diagnostics)
    Verifier(diagnostics).module(module)
    return sum(d.severity == "error" for d in diagnostics.diagnostics) == before


class Verifier(ShapeInference, ScalarTypes):
    """Checks a module against docs/ir.md; the shape ops' inference and the typing of scalar expressions are
    its mixins (`shape_inference`, `scalar_types`)."""

    # ---- module, functions, blocks ---------------------------------------------------------------
    def module(self, module: ModuleOp) -> None:
        self.module_op = module
        seen_params: dict[str, Location] = {}
        for p in module.params:
            if not PARAM_NAME.match(p.name):
                self.error(f"size parameter '{p.name}' must be spelled in capitals, digits and '_', starting "
                           "with a capital (it appears in tensor types)", p.loc)
            if p.name in seen_params:
                self.error(f"size parameter {p.name} is declared twice", p.loc,
                           [note("first here", seen_params[p.name])])
            seen_params[p.name] = p.loc
            if p.default is not None and p.default <= 0:
                self.error(f"size parameter {p.name} must be positive, not {p.default}", p.loc)
        self.params = set(seen_params)
        self.defaults = module.param_values()
        seen_funcs: dict[str, FuncOp] = {}
        for func in module.funcs:
            if func.name in seen_funcs:
                self.error(f"function @{func.name} is defined twice", func.loc,
                           [note("first definition here", seen_funcs[func.name].loc)])
            seen_funcs[func.name] = func
        for func in module.funcs:
            self.func(func)

    def func(self, func: FuncOp) -> None:
        for arg in func.args:
            self.check_type(arg.type, arg.loc)
        for t in func.result_types:
            self.check_type(t, func.loc)
        self.symbols: dict[str, Location] = {}
        self.block(func.body, ReturnOp, func.result_types, set(), func.loc, f"function @{func.name}")

    def block(self, ops: list[Op], terminator: type[TerminatorOp], expected: list[TensorType], for_vars: set[str],
              owner_loc: Location, owner: str) -> None:
        if not ops or not isinstance(ops[-1], terminator):
            self.error(f"{owner} must end with {terminator.opname}", ops[-1].loc if ops else owner_loc)
        for i, op in enumerate(ops):
            if isinstance(op, TerminatorOp):
                if not isinstance(op, terminator):
                    self.error(f"{op.opname} cannot end {owner}; use {terminator.opname}", op.loc)
                elif i != len(ops) - 1:
                    self.error(f"{op.opname} must be the last operation of {owner}", op.loc)
                else:
                    self.check_values_match(op.values, expected, op, f"{op.opname} of {owner}")
                continue
            self.op(op, for_vars)

    def check_values_match(self, values: list[Value], types: list[TensorType], op: Op, what: str) -> None:
        if len(values) != len(types):
            self.error(f"{what} gives {len(values)} value(s) but {len(types)} are expected", op.loc)
            return
        for v, t in zip(values, types, strict=True):
            if v.type is not None and not types_equal(v.type, t):
                self.error(f"%{v.name} has type {v.type} but {what} expects {t}", op.use_loc(v))

    def check_type(self, t: TensorType | None, loc: Location) -> None:
        if t is None:
            return
        for d in t.shape:
            size = dim_value(d, self.defaults)
            if size is not None and size <= 0:
                self.error(f"dimension {format_dim(d)} of {t} is {size}: sizes must be positive"
                           + (" (with the size parameters' values)" if isinstance(d, Expr) else ""), loc)
            if isinstance(d, Expr):
                bad = affine_violation(d)
                if bad is not None:
                    self.error(f"dimension {format_dim(d)} of {t} must be affine in the size parameters: {bad[1]} "
                               "(introduce a parameter for the product)", loc)
                for ref in free_names(d):
                    if ref.name not in self.params:
                        self.error(f"size parameter {ref.name} in {t} is not declared{suggest(ref.name, self.params)}"
                                   " (declare it as `solar.module @name [" + ref.name + " = ...]`)", loc)

    def declare_symbol(self, symbol: str, loc: Location, kind: str) -> None:
        prior = self.symbols.get(symbol)
        if prior is not None:
            self.error(f"{kind} @{symbol} is defined twice in this function", loc,
                       [note("first definition here", prior)])
        else:
            self.symbols[symbol] = loc

    # ---- composition ops -------------------------------------------------------------------------
    def op(self, op: Op, for_vars: set[str]) -> None:
        outer, self.current_op = self.current_op, op
        try:
            self._op(op, for_vars)
        finally:
            self.current_op = outer

    def _op(self, op: Op, for_vars: set[str]) -> None:
        types = result_types_of(op)
        for t in types:
            self.check_type(t, op.loc)
        if op.results and len(op.results) != len(types):
            self.error(f"{op.opname} produces {len(types)} result(s) but {len(op.results)} value(s) are named",
                       op.loc)
        if not op.results and types and not isinstance(op, CallOp):
            self.error(f"the result of {op.opname} is not named", op.loc)
        if isinstance(op, KernelOp):
            self.kernel(op, for_vars)
        elif isinstance(op, EinsumOp):
            self.einsum(op, for_vars)
        elif isinstance(op, GroupOp):
            self.declare_symbol(op.symbol, op.loc, "group")
            for inner in op.body:
                if isinstance(inner, GroupOp | ForOp | IfOp):
                    self.error(f"{inner.opname} cannot be nested in a fusion group", inner.loc)
            self.block(op.body, YieldOp, op.result_types, for_vars, op.loc, f"group @{op.symbol}")
        elif isinstance(op, ForOp):
            self.for_op(op, for_vars)
        elif isinstance(op, IfOp):
            self.if_op(op, for_vars)
        elif isinstance(op, CallOp):
            self.call(op)
        elif isinstance(op, ConstantOp):
            self.constant(op)
        elif isinstance(op, SliceOp):
            self.slice(op, for_vars)
        elif isinstance(op, InsertOp):
            self.insert(op, for_vars)
        elif isinstance(op, GenericOp):
            self.generic(op)

    def for_op(self, op: ForOp, for_vars: set[str]) -> None:
        for bound in (op.lower, op.upper):
            if any(True for _ in free_indices(bound)):
                self.error(f"solar.for bound `{format_expr(bound)}` must not depend on a loop index "
                           "(the trip count is static)", bound.loc)
            else:
                self.check_affine(bound, set(), bound.loc, "a solar.for bound")
        if op.var in for_vars:
            self.error(f"loop index %{op.var} shadows an enclosing solar.for index", op.loc)
        if len(op.iter_args) != len(op.result_types):
            self.error(f"solar.for has {len(op.iter_args)} iter_args but {len(op.result_types)} result type(s)",
                       op.loc)
        for arg, init, t in zip(op.iter_args, op.inits, op.result_types, strict=False):
            if init.type is not None and not types_equal(init.type, t):
                self.error(f"iter_arg %{arg.name} starts from %{init.name} of type {init.type} but the loop "
                           f"carries {t}", op.use_loc(init))
        self.block(op.body, YieldOp, op.result_types, for_vars | {op.var}, op.loc, "solar.for")

    def if_op(self, op: IfOp, for_vars: set[str]) -> None:
        t = op.cond.type
        if t is not None and (t.rank != 0 or t.dtype != DType.I1):
            self.error(f"solar.if condition %{op.cond.name} must be tensor<i1>, not {t}", op.use_loc(op.cond))
        self.block(op.then_body, YieldOp, op.result_types, for_vars, op.loc, "solar.if")
        if op.else_body or op.result_types:
            self.block(op.else_body, YieldOp, op.result_types, for_vars, op.loc, "the else region of solar.if")

    def call(self, op: CallOp) -> None:
        assert self.module_op is not None
        callee = self.module_op.lookup(op.callee)
        if callee is None:
            names = [f.name for f in self.module_op.funcs]
            self.error(f"call to undefined function @{op.callee}{suggest(op.callee, names)}", op.loc)
            return
        self.check_values_match(op.args, [a.type for a in callee.args if a.type is not None], op,
                                f"the call to @{op.callee}")
        if len(op.result_types) != len(callee.result_types) or not all(
                types_equal(a, b) for a, b in zip(op.result_types, callee.result_types, strict=False)):
            self.error(f"call to @{op.callee} declares results {_fmt_types(op.result_types)} but the function "
                       f"returns {_fmt_types(callee.result_types)}", op.loc)

    def constant(self, op: ConstantOp) -> None:
        kind = op.type.dtype
        if isinstance(op.value, list):
            if not op.type.is_static:
                self.error("a list constant needs a static shape", op.loc)
                return
            shape = _list_shape(op.value)
            if shape is None:
                self.error("constant list is ragged: every row must have the same length", op.loc)
                return
            if shape != op.type.concrete_shape():
                self.error(f"constant literal has shape {list(shape)} but the type is {op.type}", op.loc)
            leaves = _leaves(op.value)
        else:
            leaves = [op.value]
        for leaf in leaves:
            if isinstance(leaf, bool) != kind.is_bool or (isinstance(leaf, float) and not kind.is_float):
                self.error(f"constant value {leaf!r} does not fit element type {kind}", op.loc)
                break

    # ---- kernels ---------------------------------------------------------------------------------
    def kernel(self, op: KernelOp, for_vars: set[str]) -> None:
        self.declare_symbol(op.symbol, op.loc, "kernel")
        tensors: dict[str, TensorType] = {}
        roles: dict[str, str] = {}
        where: dict[str, Location] = {}

        def declare(name: str, t: TensorType | None, loc: Location, role: str) -> None:
            if name in where:
                self.error(f"tensor name {name} is used twice in kernel @{op.symbol}", loc,
                           [note("first here", where[name])])
                return
            if name in self.params:
                self.error(f"tensor name {name} is also a size parameter", loc)
            if name in RESERVED_WORDS:
                self.error(f"'{name}' is a keyword of SIR and cannot name a tensor", loc)
            where[name] = loc
            roles[name] = role
            if t is not None:
                tensors[name] = t

        for b in op.inputs:
            declare(b.name, b.value.type, b.loc, "input")
        for d in op.outputs:
            declare(d.name, d.type, d.loc, "output")
        if not op.outputs:
            self.error(f"kernel @{op.symbol} has no outputs", op.loc)
        for d in op.locals():
            self.check_type(d.type, d.loc)
            declare(d.name, d.type, d.loc, "local")
        scope = KernelScope(tensors, set(for_vars))
        reductions: dict[str, tuple[str, Location]] = {}
        written: set[str] = set()
        self.kstmts(op.body, scope, roles, reductions, written)
        for d in op.outputs:
            if d.name not in written:
                self.error(f"output {d.name} of kernel @{op.symbol} is never written", d.loc)

    def kstmts(self, body: list[KStmt], scope: KernelScope, roles: dict[str, str],
               reductions: dict[str, tuple[str, Location]], written: set[str]) -> None:
        for s in body:
            if isinstance(s, AffineFor):
                if s.var in scope.indices:
                    self.error(f"loop index %{s.var} is already bound by an enclosing loop", s.loc)
                self.bound(s.lower, "max", scope.indices, "lower")
                self.bound(s.upper, "min", scope.indices, "upper")
                inner = KernelScope(scope.tensors, scope.indices | {s.var}, scope.elements)
                self.kstmts(s.body, inner, roles, reductions, written)
            elif isinstance(s, AffineIf):
                self.condition(s.cond, scope.indices)
                self.kstmts(s.body, scope, roles, reductions, written)
            elif isinstance(s, Assign):
                self.assign(s, scope, roles, reductions)
                written.add(s.target.tensor)
            elif isinstance(s, LocalDecl):
                pass

    def bound(self, expr: Expr, combiner: str, indices: set[str], which: str) -> None:
        parts = expr.args if isinstance(expr, Call) and expr.func == combiner else (expr,)
        if isinstance(expr, Call) and expr.func in ("max", "min") and expr.func != combiner:
            self.error(f"{'an' if which == 'upper' else 'a'} {which} loop bound may use {combiner}(...), "
                       f"not {expr.func}(...)", expr.loc)
            return
        for part in parts:
            self.check_affine(part, indices, part.loc, f"the {which} loop bound")

    def condition(self, cond: Expr, indices: set[str]) -> None:
        if isinstance(cond, Binary) and cond.op == "and":
            self.condition(cond.lhs, indices)
            self.condition(cond.rhs, indices)
        elif isinstance(cond, Binary) and cond.op in COMPARISONS and cond.op != "!=":
            self.check_affine(cond.lhs, indices, cond.lhs.loc, "an affine.if constraint")
            self.check_affine(cond.rhs, indices, cond.rhs.loc, "an affine.if constraint")
        else:
            self.error(f"affine.if needs affine constraints joined by 'and' (==, <, <=, >, >=), not "
                       f"`{format_expr(cond)}`", cond.loc)

    def assign(self, s: Assign, scope: KernelScope, roles: dict[str, str],
               reductions: dict[str, tuple[str, Location]]) -> None:
        target = s.target
        role = roles.get(target.tensor)
        if role == "input":
            self.error(f"cannot write to {target.tensor}: it is an input of the kernel", target.loc)
        target_type = self.access(target, scope)
        kind = s.reduction
        if kind is not None:
            prior = reductions.get(target.tensor)
            if prior is not None and prior[0] != kind:
                self.error(f"{target.tensor} is reduced with both {prior[0]} and {kind}; a buffer takes one kind "
                           "of reduction (its identity fills it)", s.loc, [note("first reduction here", prior[1])])
            elif prior is None:
                reductions[target.tensor] = (kind, s.loc)
            if target_type is not None and target_type.is_bool and kind != "max" and kind != "min":
                self.error(f"{s.op} is not defined on i1; use max= (or) or min= (and)", s.loc)
        value_type = self.etype(s.value, scope)
        if target_type is not None:
            self.check_store(value_type, target_type, s.value)

    def check_store(self, value_type: EType, target: DType, value: Expr) -> None:
        if value_type is None or value_type == target:
            return
        if isinstance(value_type, str):
            if literal_fits(value_type, target):
                return
            self.error(f"a {value_type} cannot be stored in an {target} tensor", value.loc)
            return
        self.error(f"value of type {value_type} stored in a tensor of {target}; convert with "
                   f"cast<{target}>(...)", value.loc)

    # ---- einsums ---------------------------------------------------------------------------------
    def einsum(self, op: EinsumOp, for_vars: set[str]) -> None:
        self.declare_symbol(op.symbol, op.loc, "einsum")
        spec = self.einsum_spec(op)
        if len(op.outputs) != 1:
            self.error(f"solar.einsum has exactly one result, not {len(op.outputs)}", op.loc)
            return
        out = op.outputs[0]
        elements: dict[str, DType] = {}
        names: dict[str, Location] = {}
        for b in op.inputs:
            if b.name in names or b.name == out.name:
                self.error(f"tensor name {b.name} is used twice in einsum @{op.symbol}", b.loc)
            if b.name in RESERVED_WORDS:
                self.error(f"'{b.name}' is a keyword of SIR and cannot name a tensor", b.loc)
            names[b.name] = b.loc
            if b.value.type is not None:
                elements[b.name] = b.value.type.dtype
        if spec is not None:
            self.einsum_shapes(op, spec, out)
        if not op.body or len(op.body) > 2:
            self.error("an einsum body is one statement, optionally followed by an epilogue", op.loc)
            return
        first = op.body[0]
        # The body may read the iteration indices as values: `select(%j <= %i, S, -inf)`.
        letters = set(spec.indices) if spec is not None else set()
        scope = KernelScope({}, letters, elements)
        for i, s in enumerate(op.body):
            if s.target != out.name:
                self.error(f"einsum statement must assign the result {out.name}, not {s.target}", s.loc)
            if i == 1 and s.op != "=":
                self.error("the epilogue is a plain assignment `Out = f(Out)`", s.loc)
            if i == 1:
                scope = KernelScope({}, set(), {**elements, out.name: out.type.dtype})
            self.check_store(self.etype(s.value, scope), out.type.dtype, s.value)
        if spec is not None and spec.reduced and first.op == "=":
            self.error(f"indices {', '.join(spec.reduced)} are not in the result, so the statement must reduce "
                       "(+=, *=, max= or min=)", first.loc)

    def einsum_spec(self, op: EinsumOp) -> EinsumSpec | None:
        try:
            spec = parse_spec(op.spec)
        except SpecError as err:
            self.error(str(err), _string_offset(op.spec_loc, err.offset))
            return None
        if op.where is not None:
            try:
                constraints = parse_where(op.where)
            except SpecError as err:
                assert op.where_loc is not None
                self.error(str(err), _string_offset(op.where_loc, err.offset))
                return spec
            letters = set(spec.indices)
            for c in constraints:
                for ref in free_indices(c):
                    if ref.name not in letters:
                        assert op.where_loc is not None
                        self.error(f"where-clause index '{ref.name}' is not an index of the einsum", op.where_loc)
        return spec

    def einsum_shapes(self, op: EinsumOp, spec: EinsumSpec, out: TensorDecl) -> None:
        if len(spec.inputs) != len(op.inputs):
            self.error(f"the subscripts name {len(spec.inputs)} operand(s) but the einsum takes {len(op.inputs)}",
                       op.spec_loc)
            return
        if any(b.value.type is None for b in op.inputs):
            return
        shapes = [b.value.type.shape for b in op.inputs if b.value.type is not None] + [out.type.shape]
        terms = [*spec.inputs, spec.output]
        names = [b.name for b in op.inputs] + [out.name]
        ok = True
        for term, shape, name in zip(terms, shapes, names, strict=True):
            if len(term) != len(shape):
                self.error(f"subscripts give {name} {len(term)} dimension(s) but it has rank {len(shape)}", op.spec_loc)
                ok = False
        if not ok:
            return
        try:
            ranges = index_ranges(spec, shapes, parse_where(op.where) if op.where is not None else [])
        except SpecError as err:
            self.error(str(err), op.spec_loc)
            return
        for term, shape, name in zip(terms, shapes, names, strict=True):
            for entry, dim in zip(term, shape, strict=True):
                if isinstance(entry, IndexRef) and not dims_equal(ranges[entry.name], dim):
                    self.error(f"index '{entry.name}' has extent {format_dim(ranges[entry.name])} elsewhere but "
                               f"dimension {format_dim(dim)} in {name}", op.spec_loc)


RESERVED_WORDS = frozenset({"as", "to", "step", "local", "where", "into", "and", "or", "not", "floordiv", "ceildiv",
                            "mod", "true", "false", "inf", "nan", "iter_args", "else", "attributes", "loc"})


def _string_offset(loc: Location, offset: int) -> Location:
    # +1 skips the opening quote of the string literal.
    return Location(loc.file, loc.line, loc.col + 1 + offset)


def _fmt_types(types: list[TensorType]) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"


def _list_shape(value: Any) -> tuple[int, ...] | None:
    if not isinstance(value, list):
        return ()
    shapes = {_list_shape(v) for v in value}
    if len(shapes) > 1 or None in shapes:
        return None
    inner = shapes.pop() if shapes else ()
    return (len(value), *inner)


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]
