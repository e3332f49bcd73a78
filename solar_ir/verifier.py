"""The verifier: every structural, type and affinity rule of docs/ir.md, reporting all errors in one run."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from itertools import pairwise
from typing import Any, ClassVar

from .diagnostics import DiagnosticEngine, Location, note
from .dtypes import INDEX, DType
from .einsum_spec import EinsumSpec, SpecError, index_ranges, parse_spec, parse_where
from .expr import (
    COMPARISONS,
    LOGICAL,
    Access,
    Binary,
    BoolLit,
    Call,
    Cast,
    Expr,
    FloatLit,
    IndexRef,
    IntLit,
    NameRef,
    Unary,
    affine_violation,
    constant_value,
    evaluate_int,
    format_expr,
    free_indices,
    free_names,
)
from .ops import (
    SCATTER_REDUCTIONS,
    AffineFor,
    AffineIf,
    Assign,
    BroadcastOp,
    CallOp,
    ConcatOp,
    ConstantOp,
    EinsumOp,
    ForOp,
    FuncOp,
    GatherOp,
    GenericOp,
    GroupOp,
    IfOp,
    InsertOp,
    KernelOp,
    KStmt,
    LocalDecl,
    ModuleOp,
    Op,
    PermuteOp,
    ReshapeOp,
    ReturnOp,
    ScatterOp,
    SliceEntry,
    SliceOp,
    TensorDecl,
    TerminatorOp,
    Value,
    Word,
    YieldOp,
    result_types_of,
)
from .printer import format_attr_value
from .scalar_funcs import ALL_FUNCTION_NAMES, FUNCTIONS
from .types import PARAM_NAME, Dim, TensorType, canonical_dim, dims_equal, format_dim, types_equal


def verify(module: ModuleOp, diagnostics: DiagnosticEngine) -> bool:
    """Checks `module`, adding every problem to `diagnostics`; True when no error was found."""
    before = sum(d.severity == "error" for d in diagnostics.diagnostics)
    Verifier(diagnostics).module(module)
    return sum(d.severity == "error" for d in diagnostics.diagnostics) == before


def suggest(name: str, candidates: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(candidates), n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


# Literal types: a literal takes the element type of what it meets.
_INT_LIT, _FLOAT_LIT, _BOOL_LIT = "integer literal", "float literal", "boolean literal"
_EType = DType | str | None  # None: an error was already reported


class _KernelScope:
    """What names mean inside one kernel or einsum body."""

    def __init__(self, tensors: dict[str, TensorType], indices: set[str], elements: dict[str, DType] | None = None):
        self.tensors = tensors
        self.indices = indices  # loop indices in scope (affine.for and solar.for), without '%'
        self.elements = elements or {}  # einsum: bound operand name -> element type


class Verifier:
    def __init__(self, diagnostics: DiagnosticEngine) -> None:
        self.diag = diagnostics
        self.params: set[str] = set()
        self.module_op: ModuleOp | None = None
        self.current_op: Op | None = None
        self.defaults: dict[str, int] = {}

    def error(self, message: str, loc: Location, notes: list[Any] | None = None) -> None:
        # An op translated from other source says where it came from.
        src = self.current_op.src_loc if self.current_op is not None else None
        if src is not None:
            notes = [*(notes or []), note("translated from here", src)]
        self.diag.error(message, loc, notes)

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
            size = _dim_value(d, self.defaults)
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

    def slice_shape(self, entries: list[SliceEntry], source: TensorType, for_vars: set[str], loc: Location,
                    what: str) -> list[Dim] | None:
        if len(entries) != source.rank:
            self.error(f"{what} has {len(entries)} entries but the tensor has rank {source.rank}", loc)
            return None
        shape: list[Dim] = []
        ok = True
        for entry, dim in zip(entries, source.shape, strict=True):
            for e in (entry.index, entry.start, entry.stop, entry.step):
                if e is not None:
                    ok = self.check_affine(e, for_vars, e.loc, f"a {what} entry") and ok
            if entry.is_index:
                continue
            step = 1
            if entry.step is not None:
                value = constant_value(entry.step)
                if value is None or value <= 0:
                    self.error(f"{what} step `{format_expr(entry.step)}` must be a positive constant", entry.step.loc)
                    ok = False
                    continue
                step = value
            start = entry.start if entry.start is not None else IntLit(0)
            stop = entry.stop if entry.stop is not None else (IntLit(dim) if isinstance(dim, int) else dim)
            if not self.slice_in_bounds(start, stop, dim, entry, what):
                ok = False
                continue
            extent: Expr = stop if constant_value(start) == 0 else Binary("-", stop, start)
            if step != 1:
                extent = Binary("ceildiv", extent, IntLit(step))
            shape.append(canonical_dim(extent))
        return shape if ok else None

    def slice_in_bounds(self, start: Expr, stop: Expr, dim: Dim, entry: SliceEntry, what: str) -> bool:
        """Checks `start:stop` (or a single index) against the dimension where the values are known (constants,
        or size parameters with defaults); loop-dependent entries are checked when the program runs."""
        size = _dim_value(dim, self.defaults)
        if size is None:
            return True
        if entry.index is not None:
            index = _expr_value(entry.index, self.defaults)
            if index is not None and not 0 <= index < size:
                self.error(f"{what} index {format_expr(entry.index)} is outside a dimension of size {size}",
                           entry.loc)
                return False
            return True
        lo, hi = _expr_value(start, self.defaults), _expr_value(stop, self.defaults)
        if lo is not None and hi is not None and not 0 <= lo < hi <= size:
            self.error(f"{what} range {format_expr(start)}:{format_expr(stop)} is not a non-empty range within a "
                       f"dimension of size {size}", entry.loc)
            return False
        return True

    def slice(self, op: SliceOp, for_vars: set[str]) -> None:
        src = op.source.type
        if src is None:
            return
        shape = self.slice_shape(op.entries, src, for_vars, op.loc, "slice")
        if shape is not None:
            self.expect_type(op, TensorType(tuple(shape), src.dtype), op.type)

    def insert(self, op: InsertOp, for_vars: set[str]) -> None:
        dest, value = op.dest.type, op.value.type
        if dest is None or value is None:
            return
        self.expect_type(op, dest, op.type)
        shape = self.slice_shape(op.entries, dest, for_vars, op.loc, "insert")
        if shape is not None:
            expected = TensorType(tuple(shape), dest.dtype)
            if not types_equal(expected, value):
                self.error(f"inserted value %{op.value.name} has type {value} but the slice is {expected}",
                           op.use_loc(op.value))

    def expect_type(self, op: Op, expected: TensorType, declared: TensorType) -> None:
        if not types_equal(expected, declared):
            self.error(f"{op.opname} result type {declared} does not match the operands: expected {expected}",
                       op.loc)

    # ---- shape ops -------------------------------------------------------------------------------
    _ATTRS: ClassVar[dict[type, tuple[int, tuple[str, ...], tuple[str, ...]]]] = {
        # class: (operand count, required attributes, optional attributes)
        ReshapeOp: (1, (), ()),
        PermuteOp: (1, ("perm",), ()),
        ConcatOp: (-1, ("axis",), ()),
        BroadcastOp: (1, ("dims",), ()),
        GatherOp: (2, ("axis",), ()),
        ScatterOp: (3, ("axis",), ("reduce",)),
    }

    def generic(self, op: GenericOp) -> None:
        count, required, optional = self._ATTRS[type(op)]
        if count >= 0 and len(op.args) != count:
            self.error(f"{op.opname} takes {count} operand(s), not {len(op.args)}", op.loc)
            return
        if count < 0 and not op.args:
            self.error(f"{op.opname} needs at least one operand", op.loc)
            return
        ok = True
        for key in op.attrs:
            if key not in required and key not in optional:
                self.error(f"{op.opname} has no attribute '{key}'{suggest(key, required + optional)}", op.loc)
                ok = False
        for key in required:
            if key not in op.attrs:
                self.error(f"{op.opname} needs the attribute '{key}'", op.loc)
                ok = False
        if len(op.result_types) != 1:
            self.error(f"{op.opname} has exactly one result type", op.loc)
            return
        if not ok or any(a.type is None for a in op.args):
            return
        args = [a.type for a in op.args if a.type is not None]
        declared = op.result_types[0]
        expected = getattr(self, "_infer_" + op.opname.split(".")[1])(op, args, declared)
        if expected is not None:
            self.expect_type(op, expected, declared)

    def _axis(self, op: GenericOp, rank: int) -> int | None:
        axis = op.attrs.get("axis")
        if not isinstance(axis, int) or isinstance(axis, bool) or not 0 <= axis < rank:
            self.error(f"{op.opname} axis must be an integer in [0, {rank}), not {format_attr_value(axis)}", op.loc)
            return None
        return axis

    def _infer_reshape(self, op: GenericOp, args: list[TensorType], declared: TensorType) -> TensorType | None:
        src = args[0]
        if src.dtype != declared.dtype:
            return declared.with_dtype(src.dtype)
        defaults = self.module_op.param_values() if self.module_op else {}
        try:
            before, after = src.num_elements(defaults), declared.num_elements(defaults)
        except (KeyError, ValueError):
            return None  # symbolic sizes without values: checked when bound
        if before != after:
            self.error(f"solar.reshape changes the element count from {before} ({src}) to {after} ({declared})",
                       op.loc)
        return None

    def _infer_permute(self, op: GenericOp, args: list[TensorType], declared: TensorType) -> TensorType | None:
        perm = op.attrs["perm"]
        src = args[0]
        if not (isinstance(perm, list) and all(isinstance(p, int) and not isinstance(p, bool) for p in perm)
                and sorted(perm) == list(range(src.rank))):
            self.error(f"solar.permute perm {format_attr_value(perm)} is not a permutation of 0..{src.rank - 1}",
                       op.loc)
            return None
        return TensorType(tuple(src.shape[p] for p in perm), src.dtype)

    def _infer_concat(self, op: GenericOp, args: list[TensorType], declared: TensorType) -> TensorType | None:
        first = args[0]
        axis = self._axis(op, first.rank)
        if axis is None:
            return None
        total: Expr | int | None = None
        for a, v in zip(args, op.args, strict=True):
            if a.rank != first.rank or a.dtype != first.dtype or not all(
                    dims_equal(x, y) for d, (x, y) in enumerate(zip(a.shape, first.shape, strict=True)) if d != axis):
                self.error(f"solar.concat operand %{v.name} of type {a} does not match {first} outside axis {axis}",
                           op.use_loc(v))
                return None
            dim = a.shape[axis]
            total = dim if total is None else Binary("+", _as_expr(total), _as_expr(dim))
        assert total is not None
        shape = list(first.shape)
        shape[axis] = canonical_dim(_as_expr(total))
        return TensorType(tuple(shape), first.dtype)

    def _infer_broadcast(self, op: GenericOp, args: list[TensorType], declared: TensorType) -> TensorType | None:
        dims = op.attrs["dims"]
        src = args[0]
        if not (isinstance(dims, list) and len(dims) == src.rank and all(isinstance(d, int) for d in dims)
                and all(0 <= d < declared.rank for d in dims) and all(a < b for a, b in pairwise(dims))):
            self.error(f"solar.broadcast dims {format_attr_value(dims)} must be {src.rank} increasing result "
                       "dimensions "
                       f"below {declared.rank}", op.loc)
            return None
        if src.dtype != declared.dtype:
            return declared.with_dtype(src.dtype)
        for i, d in enumerate(dims):
            if not (dims_equal(src.shape[i], 1) or dims_equal(src.shape[i], declared.shape[d])):
                self.error(f"solar.broadcast cannot stretch input dimension {i} of size {format_dim(src.shape[i])} "
                           f"to {format_dim(declared.shape[d])}", op.loc)
        return None

    def _infer_gather(self, op: GenericOp, args: list[TensorType], declared: TensorType) -> TensorType | None:
        src, idx = args
        if not idx.dtype.is_int:
            self.error(f"solar.gather indices must be integers, not {idx.dtype}", op.use_loc(op.args[1]))
            return None
        axis = self._axis(op, src.rank)
        if axis is None:
            return None
        return TensorType(src.shape[:axis] + idx.shape + src.shape[axis + 1:], src.dtype)

    def _infer_scatter(self, op: GenericOp, args: list[TensorType], declared: TensorType) -> TensorType | None:
        dest, idx, src = args
        reduce = op.attrs.get("reduce", Word("none"))
        name = reduce.name if isinstance(reduce, Word) else reduce
        if name not in SCATTER_REDUCTIONS:
            self.error(f"solar.scatter reduce must be one of {', '.join(SCATTER_REDUCTIONS)}, not "
                       f"{format_attr_value(reduce)}", op.loc)
        if not idx.dtype.is_int:
            self.error(f"solar.scatter indices must be integers, not {idx.dtype}", op.use_loc(op.args[1]))
            return None
        axis = self._axis(op, dest.rank)
        if axis is None:
            return None
        expected_src = TensorType(dest.shape[:axis] + idx.shape + dest.shape[axis + 1:], dest.dtype)
        if not types_equal(expected_src, src):
            self.error(f"solar.scatter source %{op.args[2].name} has type {src} but must be {expected_src}",
                       op.use_loc(op.args[2]))
        return dest

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
        scope = _KernelScope(tensors, set(for_vars))
        reductions: dict[str, tuple[str, Location]] = {}
        written: set[str] = set()
        self.kstmts(op.body, scope, roles, reductions, written)
        for d in op.outputs:
            if d.name not in written:
                self.error(f"output {d.name} of kernel @{op.symbol} is never written", d.loc)

    def kstmts(self, body: list[KStmt], scope: _KernelScope, roles: dict[str, str],
               reductions: dict[str, tuple[str, Location]], written: set[str]) -> None:
        for s in body:
            if isinstance(s, AffineFor):
                if s.var in scope.indices:
                    self.error(f"loop index %{s.var} is already bound by an enclosing loop", s.loc)
                self.bound(s.lower, "max", scope.indices, "lower")
                self.bound(s.upper, "min", scope.indices, "upper")
                inner = _KernelScope(scope.tensors, scope.indices | {s.var}, scope.elements)
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

    def check_affine(self, expr: Expr, indices: set[str], loc: Location, what: str) -> bool:
        if isinstance(expr, IntLit) or (isinstance(expr, IndexRef) and expr.name in indices):
            return True  # most indices and bounds: decided without walking the expression
        bad = affine_violation(expr)
        if bad is not None:
            node, why = bad
            self.error(f"{what} must be affine: {why}", node.loc)
            return False
        ok = True
        for ref in free_indices(expr):
            if ref.name not in indices:
                self.error(f"unknown loop index %{ref.name}{suggest(ref.name, indices)}", ref.loc)
                ok = False
        for name in free_names(expr):
            if name.name not in self.params:
                self.error(f"unknown size parameter {name.name}{suggest(name.name, self.params)}", name.loc)
                ok = False
        return ok

    def assign(self, s: Assign, scope: _KernelScope, roles: dict[str, str],
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

    def check_store(self, value_type: _EType, target: DType, value: Expr) -> None:
        if value_type is None or value_type == target:
            return
        if isinstance(value_type, str):
            if _literal_fits(value_type, target):
                return
            self.error(f"a {value_type} cannot be stored in an {target} tensor", value.loc)
            return
        self.error(f"value of type {value_type} stored in a tensor of {target}; convert with "
                   f"cast<{target}>(...)", value.loc)

    def access(self, acc: Access, scope: _KernelScope) -> DType | None:
        t = scope.tensors.get(acc.tensor)
        if t is None:
            if acc.tensor not in scope.tensors:
                self.error(f"unknown tensor {acc.tensor}{suggest(acc.tensor, scope.tensors)}", acc.loc)
            return None
        if len(acc.indices) != t.rank:
            self.error(f"{acc.tensor} has rank {t.rank} but is indexed with {len(acc.indices)} "
                       f"{'index' if len(acc.indices) == 1 else 'indices'}", acc.loc)
        for idx in acc.indices:
            self.check_affine(idx, scope.indices, idx.loc, f"an index of {acc.tensor}")
        return t.dtype

    # ---- scalar expression types -----------------------------------------------------------------
    def etype(self, e: Expr, scope: _KernelScope) -> _EType:
        if isinstance(e, IntLit):
            return _INT_LIT
        if isinstance(e, FloatLit):
            return _FLOAT_LIT
        if isinstance(e, BoolLit):
            return _BOOL_LIT
        if isinstance(e, IndexRef):
            if e.name not in scope.indices:
                self.error(f"unknown loop index %{e.name}{suggest(e.name, scope.indices)}", e.loc)
                return None
            return INDEX
        if isinstance(e, NameRef):
            if e.name in scope.elements:
                return scope.elements[e.name]
            if e.name in self.params:
                return INDEX
            if e.name in scope.tensors:
                self.error(f"tensor {e.name} needs indices: {e.name}[...]", e.loc)
                return None
            self.error(f"unknown name {e.name}{suggest(e.name, [*scope.elements, *self.params, *scope.tensors])}",
                       e.loc)
            return None
        if isinstance(e, Access):
            if e.tensor in scope.elements:
                self.error(f"einsum operands are read by name alone (`{e.tensor}`); the subscripts give the indices",
                           e.loc)
                return None
            return self.access(e, scope)
        if isinstance(e, Cast):
            self.etype(e.operand, scope)
            return e.dtype
        if isinstance(e, Unary):
            t = self.etype(e.operand, scope)
            if e.op == "not":
                return self.expect_bool(t, e.operand, "not")
            if t is not None and (t == _BOOL_LIT or (isinstance(t, DType) and t.is_bool)):
                self.error("cannot negate a boolean; use not", e.loc)
                return None
            return t
        if isinstance(e, Binary):
            return self.binary(e, scope)
        if isinstance(e, Call):
            return self.call_expr(e, scope)
        raise TypeError(e)

    def expect_bool(self, t: _EType, e: Expr, what: str) -> _EType:
        if t is None:
            return None
        if t == _BOOL_LIT or t == DType.I1:
            return DType.I1
        self.error(f"{what} needs an i1 operand, not {_tname(t)}", e.loc)
        return None

    def binary(self, e: Binary, scope: _KernelScope) -> _EType:
        lt, rt = self.etype(e.lhs, scope), self.etype(e.rhs, scope)
        if e.op in LOGICAL:
            a, b = self.expect_bool(lt, e.lhs, e.op), self.expect_bool(rt, e.rhs, e.op)
            return DType.I1 if a and b else None
        t = self.unify(lt, rt, e)
        if t is None:
            return None
        if e.op in COMPARISONS:
            return DType.I1
        is_float = t == _FLOAT_LIT or (isinstance(t, DType) and t.is_float)
        is_bool = t == _BOOL_LIT or (isinstance(t, DType) and t.is_bool)
        if is_bool:
            self.error(f"`{e.op}` is not defined on i1 values; use and, or, not or select", e.loc)
            return None
        if e.op == "/" and not is_float:
            self.error(f"`/` on {_tname(t)} values: use floordiv for integers or cast to a float type", e.loc)
            return None
        if e.op in ("floordiv", "ceildiv", "mod") and is_float:
            self.error(f"`{e.op}` needs integer operands, not {_tname(t)}", e.loc)
            return None
        return t

    def unify(self, a: _EType, b: _EType, e: Expr) -> _EType:
        if a is None or b is None:
            return None
        if a == b:
            return a
        if isinstance(a, DType) and isinstance(b, DType):
            self.error(f"operands of different element types {a} and {b}; convert one with cast<{a}>(...)", e.loc)
            return None
        if isinstance(a, str) and isinstance(b, str):
            if _BOOL_LIT in (a, b):
                self.error(f"cannot combine a {a} and a {b}", e.loc)
                return None
            return _FLOAT_LIT
        dtype, lit = (a, b) if isinstance(a, DType) else (b, a)
        assert isinstance(dtype, DType) and isinstance(lit, str)
        if _literal_fits(lit, dtype):
            return dtype
        self.error(f"a {lit} cannot be combined with {dtype} values", e.loc)
        return None

    def call_expr(self, e: Call, scope: _KernelScope) -> _EType:
        types = [self.etype(a, scope) for a in e.args]
        if e.func == "select":
            if len(e.args) != 3:
                self.error(f"select takes 3 arguments (condition, if true, if false), not {len(e.args)}", e.loc)
                return None
            self.expect_bool(types[0], e.args[0], "select's condition")
            return self.unify(types[1], types[2], e)
        fn = FUNCTIONS.get(e.func)
        if fn is None:
            self.error(f"unknown function {e.func}{suggest(e.func, ALL_FUNCTION_NAMES)}", e.loc)
            return None
        if len(e.args) != fn.arity:
            self.error(f"{e.func} takes {fn.arity} argument{'s' if fn.arity > 1 else ''}, not {len(e.args)}", e.loc)
            return None
        t = types[0]
        for other, arg in zip(types[1:], e.args[1:], strict=True):
            t = self.unify(t, other, arg)
        if t is None:
            return None
        is_float = t == _FLOAT_LIT or (isinstance(t, DType) and t.is_float)
        if fn.floats_only and not is_float:
            self.error(f"{e.func} needs a float operand, not {_tname(t)}; convert with cast<f32>(...)", e.loc)
            return None
        return DType.I1 if fn.returns_bool else t

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
        scope = _KernelScope({}, letters, elements)
        for i, s in enumerate(op.body):
            if s.target != out.name:
                self.error(f"einsum statement must assign the result {out.name}, not {s.target}", s.loc)
            if i == 1 and s.op != "=":
                self.error("the epilogue is a plain assignment `Out = f(Out)`", s.loc)
            if i == 1:
                scope = _KernelScope({}, set(), {**elements, out.name: out.type.dtype})
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


def _dim_value(d: Dim, values: dict[str, int]) -> int | None:
    if isinstance(d, int):
        return d
    return _expr_value(d, values)


def _expr_value(e: Expr, values: dict[str, int]) -> int | None:
    try:
        return evaluate_int(e, values)
    except (KeyError, ValueError):
        return None


def _string_offset(loc: Location, offset: int) -> Location:
    # +1 skips the opening quote of the string literal.
    return Location(loc.file, loc.line, loc.col + 1 + offset)


def _literal_fits(lit: str, dtype: DType) -> bool:
    if lit == _BOOL_LIT:
        return dtype.is_bool
    if lit == _FLOAT_LIT:
        return dtype.is_float
    return not dtype.is_bool


def _tname(t: _EType) -> str:
    return str(t)


def _fmt_types(types: list[TensorType]) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"


def _as_expr(d: Dim | Expr) -> Expr:
    return IntLit(d) if isinstance(d, int) else d


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
