"""Tensors whose elements are functions of their own indices: `arange`/`iota`, positions shifted by a cache
length, and the boolean (or additive) masks built by comparing them (causal, sliding window, both).

Each such value is kept exactly, as ISL objects over the tensor's index space (size parameters are ISL
parameters):

- an integer tensor is an `isl.PwAff` (a piecewise affine function of its indices);
- a boolean tensor is the `isl.Set` of indices where it holds;
- a float tensor that takes one of two constants (`where(mask, 0.0, -inf)`, an additive mask) is a set and
  the two constants.

A value is derived through constants, kernels that assign one element per index from such values
(comparisons, `and`/`or`/`not`, `select`, `+`, `-`, multiplication and division by constants), running sums
of zeros, and the layout ops (reshape by unit dims, permute, broadcast, slice, concat, gather). Anything
else (a function argument, a float computation) has no index value: it depends on data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import islpy as isl

from solar.ir.expr import Access, Binary, BoolLit, Call, Cast, Expr, FloatLit, IndexRef, IntLit, NameRef, Unary
from solar.ir.expr_visitor import ExprVisitor
from solar.ir.index_map import Regroup
from solar.ir.ops import (
    AffineFor,
    Assign,
    ConcatOp,
    ConstantOp,
    GatherOp,
    KernelOp,
    LocalDecl,
    Op,
    SliceOp,
    Value,
)
from solar.ir.types import Dim

from .isl_model import UnsupportedForISL, dim_text, isl_expr, isl_name


@dataclass(frozen=True)
class TwoValued:
    """A float tensor equal to `on` where `where` holds and to `off` elsewhere (an additive mask)."""

    where: isl.Set
    on: float
    off: float


IndexValue = isl.PwAff | isl.Set | TwoValued


class _NoValue(Exception):
    """The value depends on data, or on a construct this analysis does not model."""


class IndexValues:
    """The index value of every tensor of a function that has one, computed on demand and cached.

    `size_params` are the module's size parameters: they become ISL parameters, so a mask over a
    symbolic cache length is exact for every length."""

    def __init__(self, size_params: list[str]) -> None:
        self.names = {p: isl_name(p) for p in size_params}
        self.prefix = f"[{', '.join(self.names.values())}] -> " if self.names else ""
        self._cache: dict[int, IndexValue | None] = {}

    # ---- the public questions -----------------------------------------------------------------------
    def of(self, value: Value) -> IndexValue | None:
        key = id(value)
        if key not in self._cache:
            self._cache[key] = None  # a cycle (none in SSA) or a failure below stays "no value"
            try:
                self._cache[key] = self._derive(value)
            except (_NoValue, UnsupportedForISL, isl.Error, KeyError):  # KeyError: an index of a solar.for
                self._cache[key] = None
        return self._cache[key]

    def mask(self, value: Value) -> isl.Set | TwoValued | None:
        """The mask `value` holds, when it is a boolean or two-valued float tensor of its indices."""
        v = self.of(value)
        return v if isinstance(v, isl.Set | TwoValued) else None

    # ---- ISL text helpers ---------------------------------------------------------------------------
    def box(self, shape: tuple[Dim, ...]) -> isl.Set:
        """Every index of a tensor of `shape`."""
        idx = ", ".join(f"x{k}" for k in range(len(shape)))
        cons = " and ".join(f"0 <= x{k} < {dim_text(d, self.names)}" for k, d in enumerate(shape)) or "true"
        return isl.Set(f"{self.prefix}{{ [{idx}] : {cons} }}")

    def _map(self, rank: int, exprs: list[str]) -> isl.MultiPwAff:
        """`[x0..x(rank-1)] -> [exprs]`: how an index of one tensor addresses another."""
        idx = ", ".join(f"x{k}" for k in range(rank))
        return isl.MultiPwAff(f"{self.prefix}{{ [{idx}] -> [{', '.join(f'({e})' for e in exprs)}] }}")

    def _const(self, rank: int, value: int) -> isl.PwAff:
        idx = ", ".join(f"x{k}" for k in range(rank))
        return isl.PwAff(f"{self.prefix}{{ [{idx}] -> [({value})] }}")

    # ---- derivation, by defining op -----------------------------------------------------------------
    def _derive(self, value: Value) -> IndexValue:
        op, t = value.owner, value.type
        if op is None or t is None or value not in op.results:
            raise _NoValue  # a function argument or loop-carried value: data
        if isinstance(op, ConstantOp):
            return self._constant(op, t.rank)
        if isinstance(op, KernelOp):
            return self._kernel(op, op.results.index(value))
        if op.is_view and not isinstance(op, SliceOp):
            return self._view(op, t.shape)
        if isinstance(op, SliceOp):
            return self._slice(op, t.rank)
        if isinstance(op, ConcatOp):
            return self._concat(op, t.rank)
        if isinstance(op, GatherOp):
            return self._gather(op, t.rank)
        raise _NoValue

    def _view(self, op: Op, shape: tuple[Dim, ...]) -> IndexValue:
        """Through a layout op, by the index map it declares (a new view op needs nothing here): its
        operand's value at the source index of each result index."""
        imap = op.index_map({})
        src = op.operands[0]
        assert src.type is not None
        if isinstance(imap, Regroup):
            return self._reshape(src, shape)  # a merge of dims has no affine inverse: quasi-affine here
        xs = [IndexRef(f"x{k}") for k in range(len(shape))]
        entries = imap.source_entries(xs, shape, src.type.shape)  # type: ignore[arg-type]
        names = {**self.names, **{f"%x{k}": f"x{k}" for k in range(len(shape))}}
        return self._pull(self._need(src), self._map(len(shape), [isl_expr(e, names) for e in entries]))

    def _need(self, value: Value) -> IndexValue:
        v = self.of(value)
        if v is None:
            raise _NoValue
        return v

    def _constant(self, op: ConstantOp, rank: int) -> IndexValue:
        if isinstance(op.value, list):
            raise _NoValue  # a literal table: a gather of data, not a function of the indices
        box = self.box(op.type.shape)
        if isinstance(op.value, bool):
            return box if op.value else box.empty(box.get_space())
        if isinstance(op.value, int):
            return self._const(rank, op.value)
        raise _NoValue

    def _pull(self, v: IndexValue, through: isl.MultiPwAff) -> IndexValue:
        if isinstance(v, isl.PwAff):
            return v.pullback_multi_pw_aff(through)
        if isinstance(v, isl.Set):
            return v.preimage_multi_pw_aff(through)
        return TwoValued(v.where.preimage_multi_pw_aff(through), v.on, v.off)

    def _reshape(self, src: Value, shape: tuple[Dim, ...]) -> IndexValue:
        """A reshape that only adds or drops unit dims (a `view(1, S, 1)`) is an index map; so is one that
        merges or splits dims whose strides are constants (`view(BATCH * S)` of a BATCH x S tensor, as HF's
        packed-sequence check flattens positions): each source index is a floor division and a remainder of
        the flat position, which ISL keeps exactly (quasi-affine)."""
        assert src.type is not None
        kept_src = [k for k, d in enumerate(src.type.shape) if d != 1]
        kept_out = [k for k, d in enumerate(shape) if d != 1]
        if [str(src.type.shape[k]) for k in kept_src] == [str(shape[k]) for k in kept_out]:
            exprs = ["0"] * src.type.rank
            for s, o in zip(kept_src, kept_out, strict=True):
                exprs[s] = f"x{o}"
        else:
            exprs = _delinearized(src.type.shape, shape)
        return self._pull(self._need(src), self._map(len(shape), exprs))

    def _slice(self, op: SliceOp, rank: int) -> IndexValue:
        exprs: list[str] = []
        out = 0
        for e in op.entries:
            if e.is_index:
                assert e.index is not None
                exprs.append(isl_expr(e.index, self.names))
                continue
            start = isl_expr(e.start, self.names) if e.start is not None else "0"
            step = isl_expr(e.step, self.names) if e.step is not None else "1"
            exprs.append(f"{start} + {step} * x{out}")
            out += 1
        exprs += [f"x{k}" for k in range(out, rank)]  # trailing dims the slice does not name
        return self._pull(self._need(op.source), self._map(rank, exprs))

    def _concat(self, op: ConcatOp, rank: int) -> IndexValue:
        axis = op.attrs["axis"]
        parts: list[IndexValue] = []
        offset = "0"
        for arg in op.args:
            assert arg.type is not None
            size = dim_text(arg.type.shape[axis], self.names)
            exprs = [f"x{k}" if k != axis else f"x{k} - ({offset})" for k in range(rank)]
            piece = self._pull(self._need(arg), self._map(rank, exprs))
            idx = ", ".join(f"x{k}" for k in range(rank))
            band = isl.Set(f"{self.prefix}{{ [{idx}] : {offset} <= x{axis} < {offset} + {size} }}")
            parts.append(_restrict(piece, band))
            offset = f"{offset} + {size}"
        return _union_all(parts)

    def _gather(self, op: GatherOp, rank: int) -> IndexValue:
        table, index = op.args
        assert table.type is not None and index.type is not None
        axis, n_idx = op.attrs["axis"], index.type.rank
        index_value = self._need(index)
        if not isinstance(index_value, isl.PwAff):
            raise _NoValue
        # result[p, q, r] = table[p, index[q], r]
        picked = index_value.pullback_multi_pw_aff(self._map(rank, [f"x{axis + k}" for k in range(n_idx)]))
        components = [isl.MultiPwAff.from_pw_aff(self._map(rank, [f"x{k}"]).get_at(0)) for k in range(axis)]
        components.append(isl.MultiPwAff.from_pw_aff(picked))
        components += [isl.MultiPwAff.from_pw_aff(self._map(rank, [f"x{k + n_idx - 1}"]).get_at(0))
                       for k in range(axis + 1, table.type.rank)]
        through = components[0]
        for c in components[1:]:
            through = through.flat_range_product(c)
        return self._pull(self._need(table), through)

    # ---- kernels ------------------------------------------------------------------------------------
    def _kernel(self, op: KernelOp, result: int) -> IndexValue:
        """A kernel that writes each element of its result once from index values of its inputs (an
        elementwise op over masks and positions), or a running sum of zeros."""
        decl = op.outputs[result]
        loops, body = _perfect_nest(op.body)
        if any(isinstance(s, LocalDecl) for s in op.body):
            return self._running_sum(op, decl.name)
        if len(body) != 1 or not isinstance(body[0], Assign):
            raise _NoValue
        stmt = body[0]
        if stmt.op != "=" or stmt.target.tensor != decl.name:
            raise _NoValue
        env = self._loop_env(op, loops, stmt.target, decl.type.shape)
        return _Evaluator(self, op, env).value(stmt.value)

    def _loop_env(self, op: KernelOp, loops: list[AffineFor], target: Access,
                  shape: tuple[Dim, ...]) -> dict[str, int]:
        """Loop index -> result dim, for a rectangular nest whose store is `Y[%i0, .., %in]`."""
        if len(loops) != len(shape) or len(target.indices) != len(shape):
            raise _NoValue
        env: dict[str, int] = {}
        for k, (loop, idx, dim) in enumerate(zip(loops, target.indices, shape, strict=True)):
            if not (isinstance(idx, IndexRef) and idx.name == loop.var and loop.step == 1
                    and isinstance(loop.lower, IntLit) and loop.lower.value == 0 and str(loop.upper) == str(dim)):
                raise _NoValue
            env[loop.var] = k
        return env

    def _running_sum(self, op: KernelOp, out: str) -> IndexValue:
        """`acc[outer] += e; Y[outer, r] = acc[outer]` (a cumsum) where `e` is zero everywhere: Y is zero."""
        decls = [s for s in op.body if isinstance(s, LocalDecl)]
        loops, body = _perfect_nest([s for s in op.body if not isinstance(s, LocalDecl)])
        if len(decls) != 1 or len(body) != 2 or not all(isinstance(s, Assign) for s in body):
            raise _NoValue
        acc, store = body
        assert isinstance(acc, Assign) and isinstance(store, Assign)
        if not (acc.op == "+=" and acc.target.tensor == decls[0].decl.name and store.op == "="
                and store.target.tensor == out and store.value == acc.target):
            raise _NoValue
        shape = op.outputs[0].type.shape
        env = self._loop_env(op, loops, store.target, shape)
        term = _Evaluator(self, op, env).value(acc.value)
        box = self.box(shape)
        if not isinstance(term, isl.PwAff) or not box.is_subset(term.zero_set()):
            raise _NoValue
        return self._const(len(shape), 0)


def _delinearized(src: tuple[Dim, ...], out: tuple[Dim, ...]) -> list[str]:
    """The index of `src` that index x0..xn of `out` (the same elements, row-major) reads. Dims that lead both
    shapes alike map one to one; past them every dim but the first must be a constant, so that the flat
    position and its division by each stride stay quasi-affine (a symbolic stride would make them products
    of unknowns). Raises _NoValue otherwise."""
    lead = 0
    while lead < min(len(src), len(out)) - 1 and str(src[lead]) == str(out[lead]):
        lead += 1
    rest_src, rest_out = src[lead:], out[lead:]
    if not all(isinstance(d, int) for d in (*rest_src[1:], *rest_out[1:])):
        raise _NoValue

    def strides(dims: tuple[Dim, ...]) -> list[int]:
        return [math.prod(int(d) for d in dims[k + 1:]) for k in range(len(dims))]

    flat = " + ".join(f"{stride} * x{lead + k}" for k, stride in enumerate(strides(rest_out))) or "0"
    exprs = [f"x{k}" for k in range(lead)]
    for k, stride in enumerate(strides(rest_src)):
        part = f"floor(({flat}) / {stride})"
        exprs.append(part if k == 0 else f"({part}) mod {int(rest_src[k])}")
    return exprs


def _perfect_nest(body: list) -> tuple[list[AffineFor], list]:
    loops: list[AffineFor] = []
    while len(body) == 1 and isinstance(body[0], AffineFor):
        loops.append(body[0])
        body = body[0].body
    return loops, body


def _restrict(v: IndexValue, where: isl.Set) -> IndexValue:
    if isinstance(v, isl.PwAff):
        return v.intersect_domain(where)
    if isinstance(v, isl.Set):
        return v.intersect(where)
    return TwoValued(v.where.intersect(where), v.on, v.off)


def _union_all(parts: list[IndexValue]) -> IndexValue:
    """The union of values on disjoint pieces of the index space (a concat)."""
    first = parts[0]
    # An integer value joins by piecewise union, a boolean one by set union; additive masks are rare in a
    # concat, and their bands would need both constants to agree.
    for kind, join in ((isl.PwAff, "union_add"), (isl.Set, "union")):
        if isinstance(first, kind):
            out = first
            for p in parts[1:]:
                if not isinstance(p, kind):
                    raise _NoValue
                out = getattr(out, join)(p)
            return out.coalesce()
    raise _NoValue


_COMPARE = {"<": "lt_set", "<=": "le_set", ">": "gt_set", ">=": "ge_set", "==": "eq_set", "!=": "ne_set"}


class _Evaluator(ExprVisitor[IndexValue]):
    """The index value of a kernel expression, over the kernel's result index space."""

    def __init__(self, values: IndexValues, op: KernelOp, env: dict[str, int]) -> None:
        self.values = values
        self.rank = len(env)
        self.env = env
        self.inputs = {b.name: b.value for b in op.inputs}
        self.shape = op.outputs[0].type.shape

    @cached_property
    def box(self) -> isl.Set:  # made when first needed: most kernels read data, which has no index value
        return self.values.box(self.shape)

    def _var(self, text: str) -> isl.PwAff:
        return self.values._map(self.rank, [text]).get_at(0)

    value = ExprVisitor.visit

    def visit_int_lit(self, e: IntLit) -> IndexValue:
        return self.values._const(self.rank, e.value)

    def visit_bool_lit(self, e: BoolLit) -> IndexValue:
        return self.box if e.value else self.box.empty(self.box.get_space())

    def visit_index_ref(self, e: IndexRef) -> IndexValue:
        if e.name not in self.env:
            raise _NoValue
        return self._var(f"x{self.env[e.name]}")

    def visit_name_ref(self, e: NameRef) -> IndexValue:
        if e.name not in self.values.names:
            raise _NoValue
        return self._var(self.values.names[e.name])

    def visit_unary(self, e: Unary) -> IndexValue:
        inner = self.value(e.operand)
        if e.op == "not" and isinstance(inner, isl.Set):
            return self.box.subtract(inner)
        if e.op == "-" and isinstance(inner, isl.PwAff):
            return inner.neg()
        raise _NoValue

    def visit_call(self, e: Call) -> IndexValue:
        if e.func == "select" and len(e.args) == 3:
            return self._select(*e.args)
        raise _NoValue

    def visit_other(self, e: Expr) -> IndexValue:
        raise _NoValue  # a float literal, any other function: it depends on data or is not modelled

    def _affine_index(self, e: Expr) -> str:
        names = {**self.values.names, **{"%" + v: f"x{k}" for v, k in self.env.items()}}
        return isl_expr(e, names)

    def visit_access(self, e: Access) -> IndexValue:
        if e.tensor not in self.inputs:
            raise _NoValue
        source = self.values.of(self.inputs[e.tensor])
        if source is None:
            raise _NoValue
        through = self.values._map(self.rank, [self._affine_index(i) for i in e.indices])
        return _restrict(self.values._pull(source, through), self.box)

    def visit_cast(self, e: Cast) -> IndexValue:
        inner = self.value(e.operand)
        if e.dtype.is_bool:
            return inner.non_zero_set() if isinstance(inner, isl.PwAff) else inner
        if e.dtype.is_float:
            if isinstance(inner, isl.Set):
                return TwoValued(inner, 1.0, 0.0)
            if isinstance(inner, TwoValued):
                return inner
            raise _NoValue
        if isinstance(inner, isl.Set):  # a boolean as an integer: 1 where it holds
            one, zero = self.values._const(self.rank, 1), self.values._const(self.rank, 0)
            return one.intersect_domain(inner).union_add(zero.intersect_domain(self.box.subtract(inner)))
        if isinstance(inner, isl.PwAff):
            return inner
        raise _NoValue

    def visit_binary(self, e: Binary) -> IndexValue:
        if e.op in ("and", "or"):
            a, b = self.value(e.lhs), self.value(e.rhs)
            if not (isinstance(a, isl.Set) and isinstance(b, isl.Set)):
                raise _NoValue
            return (a.intersect(b) if e.op == "and" else a.union(b)).coalesce()
        if e.op in _COMPARE:
            a, b = self.value(e.lhs), self.value(e.rhs)
            if isinstance(a, isl.PwAff) and isinstance(b, isl.PwAff):
                return getattr(a, _COMPARE[e.op])(b).intersect(self.box).coalesce()
            if isinstance(a, isl.Set) and isinstance(b, isl.Set) and e.op in ("==", "!="):
                same = a.intersect(b).union(self.box.subtract(a.union(b)))
                return same if e.op == "==" else self.box.subtract(same)
            raise _NoValue
        if isinstance(e.lhs, FloatLit) or isinstance(e.rhs, FloatLit):
            raise _NoValue
        a, b = self.value(e.lhs), self.value(e.rhs)
        if not (isinstance(a, isl.PwAff) and isinstance(b, isl.PwAff)):
            raise _NoValue
        if e.op == "+":
            return a.add(b)
        if e.op == "-":
            return a.sub(b)
        if e.op == "*" and (a.is_cst() or b.is_cst()):
            return a.mul(b)
        if e.op == "floordiv" and b.is_cst():
            return a.div(b).floor()
        if e.op == "mod" and isinstance(e.rhs, IntLit) and e.rhs.value > 0:
            return a.mod_val(isl.Val(e.rhs.value))
        raise _NoValue

    def _float_constant(self, e: Expr) -> float | None:
        """A float literal, or a read of a float constant that fills its tensor (`torch.where(m, 0.0, min)`
        exports its 0.0 as a scalar constant)."""
        if isinstance(e, FloatLit):
            return e.value
        if isinstance(e, Access) and e.tensor in self.inputs:
            owner = self.inputs[e.tensor].owner
            if isinstance(owner, ConstantOp) and isinstance(owner.value, float):
                return owner.value
        return None

    def _select(self, c: Expr, a: Expr, b: Expr) -> IndexValue:
        cond = self.value(c)
        if not isinstance(cond, isl.Set):
            raise _NoValue
        on, off = self._float_constant(a), self._float_constant(b)
        if on is not None and off is not None:
            return TwoValued(cond, on, off)  # `where(mask, 0.0, -inf)`: an additive mask
        va, vb = self.value(a), self.value(b)
        rest = self.box.subtract(cond)
        if isinstance(va, isl.Set) and isinstance(vb, isl.Set):
            return va.intersect(cond).union(vb.intersect(rest)).coalesce()
        if isinstance(va, isl.PwAff) and isinstance(vb, isl.PwAff):
            return va.intersect_domain(cond).union_add(vb.intersect_domain(rest)).coalesce()
        raise _NoValue


def is_masked_off(value: float) -> bool:
    """An additive mask entry that removes its key: -inf, or a float type's lowest value (HF's `min_dtype`),
    which underflows `exp` to exactly zero as -inf does."""
    return value == -math.inf or value <= -3.0e38 or value == -65504.0
