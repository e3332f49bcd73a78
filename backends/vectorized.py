"""`solar.einsum` evaluated with NumPy array operations, chunk by chunk on a thread pool.

Used for einsums whose combine or epilogue calls transcendental functions (exp, tanh, ...): NumPy's ufuncs
use SIMD implementations of these, while Numba without Intel SVML calls the scalar C library once per element.
The iteration space (result letters, then reduced letters) is cut along the first result letter; each chunk is
an array expression over broadcast operand views, masked by the where-clause, reduced along the reduced axes.
NumPy releases the GIL in its loops, so chunks run in parallel on Numba's thread count.

Semantics are those of the loop nest (`codegen.EinsumGen`): f32 computation for narrow floats, typed literals,
identities for masked-out points, the epilogue once per result element. Reductions may be reassociated
(NumPy sums pairwise), as docs/ir.md allows.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from solar.ir import expr as ex
from solar.ir.dtypes import DType
from solar.ir.expr import COMPARISONS, LOGICAL, Expr, walk
from solar.ir.expr_visitor import ExprVisitor
from solar.ir.ops import EinsumOp

from .codegen_expr import ComputeTypes, compute_class, convert_constant, resolve_type, unify_types
from .dtypes import STORAGE, compute_dtype, identity, round_array
from .einsum import LinearEntry, geometry, letter_mask, operand_view
from .errors import UnsupportedError

# Functions whose NumPy ufunc is much faster than a scalar libm call per element.
TRANSCENDENTAL = frozenset({"exp", "exp2", "expm1", "log", "log2", "log1p", "sin", "cos", "tanh", "sigmoid",
                            "pow", "erf"})
# Iteration points per chunk: a chunk's temporaries (1 MB each in f32) come from the allocator's free lists and
# stay in cache; chunks of many MB are mapped fresh from the system each time and cost page faults.
CHUNK_ELEMENTS = 1 << 18


def prefers_numpy(op: EinsumOp) -> bool:
    """True when the einsum calls a transcendental function (see the module docstring)."""
    return any(isinstance(n, ex.Call) and n.func in TRANSCENDENTAL for s in op.body for n in walk(s.value))


@dataclass
class VectorPlan:
    op: EinsumOp
    out_letters: list[str]
    red_letters: list[str]
    ranges: dict[str, int]
    terms: list[list[LinearEntry]]
    where: list[ex.Binary]


def vector_plan(op: EinsumOp) -> VectorPlan | None:
    geo = geometry(op)
    shaped = geo.letters_and_terms()
    if shaped is None:
        return None
    out_letters, red, terms = shaped
    if not out_letters:
        return None  # a rank-0 result has nothing to cut into chunks
    per_row = math.prod(geo.ranges[k] for k in [*out_letters[1:], *red])
    if per_row > CHUNK_ELEMENTS * 64:
        return None  # one slice of the first result letter is already too large: the loop nest streams it
    return VectorPlan(op, out_letters, red, geo.ranges, terms, geo.where)


class _Eval(ExprVisitor[Any]):
    """Evaluates SIR scalar expressions on broadcast NumPy arrays, typed as the generated loops are."""

    def __init__(self, op: EinsumOp, arrays: dict[str, Any], types: dict[str, DType]) -> None:
        self.arrays = arrays
        self.types = types
        self.compute_types = ComputeTypes(self.element_type)
        # Temporaries this evaluation created, by id, kept alive so an id is never reused by another array:
        # an arithmetic ufunc may write its result into one of them instead of allocating (half the memory
        # traffic for `exp(X - M) / S`). Operand views are never in here, so inputs are never written.
        self.owned: dict[int, np.ndarray] = {}

    def apply(self, f: np.ufunc, *args: Any) -> Any:
        """`f(*args)`, reusing an owned temporary of the result's shape and dtype as the output."""
        shape = np.broadcast_shapes(*(np.shape(a) for a in args))
        dtype = np.result_type(*args)
        out = next((a for a in args if isinstance(a, np.ndarray) and id(a) in self.owned and a.shape == shape
                    and a.dtype == dtype), None)
        with np.errstate(all="ignore"):
            result = f(*args) if out is None else f(*args, out=out)
        if isinstance(result, np.ndarray) and result.dtype == dtype:
            self.owned[id(result)] = result
        return result

    def element_type(self, node: ex.NameRef | ex.Access) -> DType:
        assert isinstance(node, ex.NameRef)
        return self.types[node.name]

    def typeof(self, e: Expr) -> DType | str:
        return self.compute_types.visit(e)

    def ev(self, e: Expr, ctx: DType | None) -> Any:
        """The value of `e` as an array, in the type it takes where `ctx` is expected."""
        return self.visit(e, resolve_type(self.typeof(e), ctx))

    def visit_int_lit(self, e: ex.IntLit, t: DType) -> Any:
        return _scalar(e.value, t)

    visit_float_lit = visit_bool_lit = visit_int_lit

    def visit_name_ref(self, e: ex.NameRef, t: DType) -> Any:
        return self.arrays[e.name]

    def visit_index_ref(self, e: ex.IndexRef, t: DType) -> Any:
        return self.arrays["%" + e.name]  # the letter's values along its axis (see `evaluate`)

    def visit_unary(self, e: ex.Unary, t: DType) -> Any:
        if e.op == "not":
            return np.logical_not(self.ev(e.operand, DType.I1))
        return self.apply(np.negative, self.ev(e.operand, t))

    def visit_other(self, e: Expr, t: DType) -> Any:
        raise UnsupportedError(f"cannot evaluate `{e}` in an einsum")

    def visit_binary(self, e: ex.Binary, t: DType) -> Any:
        if e.op in LOGICAL:
            f = np.logical_and if e.op == "and" else np.logical_or
            return f(self.ev(e.lhs, DType.I1), self.ev(e.rhs, DType.I1))
        if e.op in COMPARISONS:
            ot = resolve_type(unify_types(self.typeof(e.lhs), self.typeof(e.rhs)), None)
            a, b = self.ev(e.lhs, ot), self.ev(e.rhs, ot)
            return {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater,
                    ">=": np.greater_equal}[e.op](a, b)
        a, b = self.ev(e.lhs, t), self.ev(e.rhs, t)
        arithmetic = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}
        if e.op in arithmetic:
            return self.apply(arithmetic[e.op], a, b)
        with np.errstate(divide="ignore"):
            if e.op == "floordiv":
                return np.floor_divide(a, b)
            if e.op == "ceildiv":
                return np.negative(np.floor_divide(np.negative(a), b))
            if e.op == "mod":
                return np.mod(a, b)
        raise UnsupportedError(f"operator {e.op}")

    def visit_call(self, e: ex.Call, t: DType) -> Any:
        f = e.func
        if f == "select":
            return np.where(self.ev(e.args[0], DType.I1), self.ev(e.args[1], t), self.ev(e.args[2], t))
        if f == "isnan":
            at = resolve_type(self.typeof(e.args[0]), None)
            x = self.ev(e.args[0], at)
            return np.isnan(x) if at.is_float else np.zeros(np.shape(x), dtype=bool)
        args = [self.ev(a, t) for a in e.args]
        one = _scalar(1, t) if t.is_float else 1
        if f == "max":
            return np.logical_or(*args) if t.is_bool else np.maximum(*args)
        if f == "min":
            return np.logical_and(*args) if t.is_bool else np.minimum(*args)
        unary = {"exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
                 "log1p": np.log1p, "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "sqrt": np.sqrt,
                 "abs": np.abs, "neg": np.negative, "sign": np.sign, "floor": np.floor, "ceil": np.ceil,
                 "round": np.rint}
        with np.errstate(all="ignore"):
            if f in unary:
                return self.apply(unary[f], args[0])
            if f == "sigmoid":
                denominator = self.apply(np.add, one, self.apply(np.exp, self.apply(np.negative, args[0])))
                return self.apply(np.divide, one, denominator)
            if f == "rsqrt":
                return self.apply(np.divide, one, self.apply(np.sqrt, args[0]))
            if f == "reciprocal":
                return self.apply(np.divide, one, args[0])
            if f == "pow":
                return self.apply(np.power, args[0], args[1])
            if f == "erf":
                from .runtime import erf_array  # imports Numba: only einsums that call erf pay for it

                x = np.asarray(args[0])
                return erf_array(np.ascontiguousarray(x).reshape(-1)).reshape(x.shape).astype(x.dtype, copy=False)
        raise UnsupportedError(f"unknown function {f}")

    def visit_cast(self, e: ex.Cast, t: DType) -> Any:
        target = e.dtype
        src_t = self.typeof(e.operand)
        if isinstance(src_t, str) and isinstance(e.operand, ex.IntLit | ex.FloatLit | ex.BoolLit):
            return _scalar(convert_constant(e.operand.value, target), compute_class(target))
        src = resolve_type(src_t, None)
        x = np.asarray(self.ev(e.operand, src))
        if target.is_bool:
            return x if src.is_bool else x != 0
        if target.is_float:
            y = x.astype(compute_dtype(target))
            return round_array(y, target) if target != DType.F64 and target != DType.F32 else y
        info = np.iinfo(STORAGE[target])
        if src.is_float:
            with np.errstate(invalid="ignore"):
                clipped = np.clip(np.trunc(np.nan_to_num(x, nan=0.0)), info.min, info.max)
            return clipped.astype(STORAGE[target])
        return x.astype(STORAGE[target])


def _scalar(value: float | int | bool, t: DType) -> Any:
    if t.is_bool:
        return np.bool_(value)
    return compute_dtype(t).type(value)


# Longer than most: the chunk worker and the threads that run it share the plan's views, letters and result buffer.
def evaluate(plan: VectorPlan, operands: list[np.ndarray], threads: int) -> np.ndarray:
    """The einsum's result in the compute dtype, epilogue applied, not yet rounded to a narrow type."""
    op = plan.op
    out = op.outputs[0]
    out_t = out.type.dtype
    ctx = compute_class(out_t)
    letters = [*plan.out_letters, *plan.red_letters]
    views = [operand_view(a, t, plan.ranges) for a, t in zip(operands, plan.terms, strict=True)]
    first = plan.out_letters[0]
    n_first = plan.ranges[first]
    per_row = math.prod(plan.ranges[k] for k in letters[1:])
    rows = max(1, min(n_first, CHUNK_ELEMENTS // max(per_row, 1), -(-n_first // (threads * 2))))
    result = np.empty([plan.ranges[k] for k in plan.out_letters], dtype=compute_dtype(out_t))
    types = {b.name: b.value.type.dtype for b in op.inputs if b.value.type is not None}
    types[out.name] = out_t

    def chunk(lo: int) -> None:
        hi = min(n_first, lo + rows)
        arrays: dict[str, Any] = {}
        for b, (view, vl) in zip(op.inputs, views, strict=True):
            arrays[b.name] = _aligned(view, vl, letters, first, lo, hi)
        for n, k in enumerate(letters):  # the body may read the indices as values
            values = np.arange(lo, hi) if k == first else np.arange(plan.ranges[k])
            arrays["%" + k] = values.reshape([-1 if d == n else 1 for d in range(len(letters))])
        shape = [hi - lo, *(plan.ranges[k] for k in letters[1:])]
        stmt = op.body[0]
        ev = _Eval(op, arrays, types)
        with np.errstate(all="ignore"):
            value = np.broadcast_to(ev.ev(stmt.value, ctx), shape)
            red = stmt.reduction
            fill = identity(red, out_t) if red else 0
            if plan.where:
                value = np.where(letter_mask(plan.where, letters, plan.ranges, (first, lo, hi)), value,
                                 _scalar(fill, ctx))
            axes = tuple(range(len(plan.out_letters), len(letters)))
            if red is None and len(op.body) == 1:
                np.copyto(result[lo:hi], value, casting="unsafe")  # a map: straight into the result
                return
            if red is None:
                reduced = value
            elif out_t.is_bool:
                reduced = (np.any if red == "max" else np.all)(value, axis=axes)
            else:
                # Sums and products of floats accumulate in f64, as kernels do (`codegen_expr.wide_accumulator`).
                wide = {"dtype": np.float64} if red in ("add", "mul") and out_t.is_float else {}
                reduced = {"add": np.sum, "mul": np.prod, "max": np.max, "min": np.min}[red](value, axis=axes, **wide)
            reduced = np.asarray(reduced).astype(compute_dtype(out_t), copy=False)
            if len(op.body) > 1:
                used = {n.name for n in walk(op.body[1].value) if isinstance(n, ex.NameRef)}
                out_arrays = {k: _drop_reduced(v, len(plan.out_letters)) for k, v in arrays.items() if k in used}
                out_arrays[out.name] = reduced
                reduced = np.broadcast_to(_Eval(op, out_arrays, types).ev(op.body[1].value, ctx), reduced.shape)
        result[lo:hi] = reduced

    starts = range(0, n_first, rows)
    if threads > 1 and len(starts) > 1:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            list(pool.map(chunk, starts))
    else:
        for lo in starts:
            chunk(lo)
    return result


def _aligned(view: np.ndarray, view_letters: list[str], letters: list[str], first: str, lo: int,
             hi: int) -> np.ndarray:
    """An operand view sliced to the chunk and laid out along `letters` (size-1 axes where it has none)."""
    if first in view_letters:
        sl = [slice(None)] * view.ndim
        sl[view_letters.index(first)] = slice(lo, hi)
        view = view[tuple(sl)]
    order = [view_letters.index(k) for k in letters if k in view_letters]
    view = view.transpose(order)
    shape = []
    it = iter(view.shape)
    for k in letters:
        shape.append(next(it) if k in view_letters else 1)
    return view.reshape(shape)


def _drop_reduced(array: Any, keep: int) -> Any:
    """An operand as the epilogue sees it: only the result axes (it may not vary along reduced letters)."""
    a = np.asarray(array)
    if a.ndim <= keep:
        return a
    if any(d != 1 for d in a.shape[keep:]):
        raise UnsupportedError("an einsum epilogue reads an operand along a reduced index")
    return a.reshape(a.shape[:keep])
