"""The framework-neutral half of lowering: an `Emitter` that appends SIR to a block through the builder, and
kernel templates (pointwise with broadcasting, reductions) that the PyTorch and JAX tables share.

Every template emits exactly one `solar.kernel` (the unit of execution: one framework op, one kernel) or
only composition ops (reshape, permute, slice, ...), which cost no arithmetic.

Shapes are tuples of `Dim` (an int, or an `Expr` over size parameters such as `B`), so a template written
once serves full-size analysis and small-size validation alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from solar.ir.builder import BlockBuilder, KernelBuilder
from solar.ir.diagnostics import Location
from solar.ir.dtypes import DType
from solar.ir.expr import (
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
    as_expr,
)
from solar.ir.ops import FlipOp, GenericOp, Op, RollOp, SliceEntry, Value
from solar.ir.rewriter import NameGenerator
from solar.ir.types import Dim, TensorType, canonical_dim, dims_equal, format_dim

Shape = tuple[Dim, ...]
Scalar = int | float | bool
Operand = Value | Scalar


@dataclass(frozen=True)
class SizeFloat:
    """A float number computed from the size parameters alone: a SymFloat of a dynamic export (batch norm's
    backward scales by `1 / (N·H·W)`). `expr` is an f64 expression of literals and size parameters, as the
    framework computes it on the host; a constant of the program, it costs no operation where it is used."""

    expr: Expr


class LoweringError(Exception):
    """A framework op (or one of its configurations) this frontend cannot translate; the message names what."""


class InternalLoweringError(LoweringError):
    """A lowering broke one of SOLAR's own invariants (a result type export disagrees with): a bug in SOLAR,
    reported at the op's source line as an internal error (exit 2)."""


# ---- shapes and expressions ------------------------------------------------------------------------


def dexpr(d: Dim | Expr) -> Expr:
    return IntLit(d) if isinstance(d, int) else d


def canon(d: Dim | Expr) -> Dim:
    return canonical_dim(dexpr(d))


def ttype(shape: Sequence[Dim | Expr], dtype: DType) -> TensorType:
    return TensorType(tuple(canon(d) for d in shape), dtype)


def prod_dims(dims: Sequence[Dim]) -> Dim:
    """The product of dims, folded to an int where they are static."""
    const = 1
    sym: Expr | None = None
    for d in dims:
        if isinstance(d, int):
            const *= d
        else:
            sym = d if sym is None else Binary("*", sym, d)
    if sym is None:
        return const
    return canon(sym if const == 1 else Binary("*", sym, IntLit(const)))


def is_one(d: Dim) -> bool:
    return isinstance(d, int) and d == 1


def broadcast_shapes(*shapes: Shape) -> Shape:
    rank = max((len(s) for s in shapes), default=0)
    out: list[Dim] = []
    for k in range(rank):
        dim: Dim = 1
        for s in shapes:
            pos = k - (rank - len(s))
            if pos < 0:
                continue
            d = s[pos]
            if is_one(dim):
                dim = d
            elif not is_one(d) and not dims_equal(d, dim):
                raise LoweringError(f"shapes {[list(map(str, s)) for s in shapes]} do not broadcast")
        out.append(dim)
    return tuple(out)


def bcast_index(in_shape: Shape, out_shape: Shape, idx: Sequence[Expr]) -> tuple[Expr, ...]:
    """Indices into an input of `in_shape` broadcast (numpy rules, right-aligned) to `out_shape`."""
    off = len(out_shape) - len(in_shape)
    out: list[Expr] = []
    for k, d in enumerate(in_shape):
        # A size-1 input dim against a larger output dim reads element 0 (the broadcast).
        out.append(IntLit(0) if is_one(d) and not is_one(out_shape[k + off]) else idx[k + off])
    return tuple(out)


def norm_dim(d: int, rank: int) -> int:
    r = max(rank, 1)
    if not -r <= d < r:
        raise LoweringError(f"dimension {d} is out of range for rank {rank}")
    return d % r


def linear_index(idx: Sequence[Expr], shape: Shape) -> Expr:
    """Row-major flat index of `idx` in `shape`: Σ stride·index (affine when the inner sizes are static)."""
    expr: Expr | None = None
    stride: Dim = 1
    for i, d in zip(reversed(idx), reversed(shape), strict=True):
        term = i if is_one(stride) else Binary("*", dexpr(stride), i)
        expr = term if expr is None else Binary("+", term, expr)
        stride = prod_dims([stride, d])
    return expr if expr is not None else IntLit(0)


# ---- scalar helpers --------------------------------------------------------------------------------


def lit(value: Scalar, dtype: DType) -> Expr:
    """A literal of `value` fit for `dtype` (a float literal in a float context, an integer otherwise)."""
    if dtype.is_bool:
        return BoolLit(bool(value))
    if dtype.is_float:
        return FloatLit(float(value))
    if isinstance(value, float):
        if value != int(value):
            raise LoweringError(f"the float scalar {value} cannot take the integer type {dtype}")
        value = int(value)
    return IntLit(int(value))


def cast(expr: Expr, src: DType, dst: DType) -> Expr:
    """Converts `expr` (of element type `src`) to `dst`; a boolean of a number is `x != 0`."""
    if src == dst:
        return expr
    if isinstance(expr, FloatLit | IntLit | BoolLit):
        return lit(expr.value, dst)
    if dst.is_bool:
        return Binary("!=", expr, lit(0, src))
    return Cast(dst, expr)


def fcall(name: str, *args: Expr) -> Expr:
    return Call(name, tuple(args))


def select(c: Expr, a: Expr, b: Expr) -> Expr:
    return Call("select", (c, a, b))


def smax(a: Expr, b: Expr) -> Expr:
    return Call("max", (a, b))


def smin(a: Expr, b: Expr) -> Expr:
    return Call("min", (a, b))


def acc_dtype(dtype: DType) -> DType:
    """Accumulation type: narrow floats accumulate in f32, as eager libraries do."""
    return DType.F32 if dtype.is_float and dtype not in (DType.F32, DType.F64) else dtype


def float_of(dtype: DType) -> DType:
    """The float type integer data is promoted to for float math (torch's default dtype)."""
    return dtype if dtype.is_float else DType.F32


def conj(*conds: Expr | None) -> Expr | None:
    out: Expr | None = None
    for c in conds:
        if c is not None:
            out = c if out is None else Binary("and", out, c)
    return out


# ---- the emitter ----------------------------------------------------------------------------------


@dataclass
class Emitter:
    """Appends ops to the current block; names kernels uniquely per function and stamps source locations."""

    block: BlockBuilder
    symbols: NameGenerator = field(default_factory=NameGenerator)  # kernel symbols, shared by nested emitters
    loc: Location | None = None
    for_vars: list[str] = field(default_factory=list)
    hint: str = "k"  # the current framework op's name: kernels are named after it
    # How the framework runs f32 contractions by default, per kind ("conv", "matmul"): the value of the
    # kernels' `fp32_precision` attribute (docs/ir.md, "Attributes"); empty: no attribute.
    fp32: dict[str, str] = field(default_factory=dict)
    # Results whose size depends on the data (nonzero, masked select): each is held padded to a static
    # bound, with its true count (a rank-0 value) beside it.
    bounded: dict[Value, Value] = field(default_factory=dict)
    # Values that are an iota (each element its index along one dim), by that dim: a sort that carries one
    # beside its keys returns its own index result for it.
    iotas: dict[Value, int] = field(default_factory=dict)
    # The size parameters' values at the export's sizes: what a lowering that chooses between equivalent
    # forms by cost (the contraction order of an N-ary einsum) evaluates symbolic dims at.
    sizes: dict[str, int] = field(default_factory=dict)

    def mark_precision(self, kb: KernelBuilder, kind: str, dtype: DType, override: str | None = None) -> None:
        """Records on an f32 contraction kernel how the framework runs it (`override`: the op's own
        precision argument, as JAX's `precision=`), so the cost model prices what a real run does."""
        value = override or self.fp32.get(kind)
        if value and dtype is DType.F32:
            kb.op.attrs["fp32_precision"] = value

    def inner(self, block: BlockBuilder, for_vars: list[str]) -> Emitter:
        """An emitter for a nested region (a loop body) sharing names, location and precision policy."""
        return Emitter(block, self.symbols, self.loc, for_vars, self.hint, self.fp32, self.bounded, self.iotas,
                       self.sizes)

    def symbol(self, hint: str | None = None) -> str:
        return self.symbols.fresh(_sanitize(hint or self.hint))

    def stamp(self, op: Op) -> None:
        if self.loc is not None:
            op.src_loc = self.loc

    def kernel(self, inputs: Sequence[tuple[Value, str]], outputs: Sequence[tuple[str, TensorType]],
               hint: str | None = None) -> KernelBuilder:
        kb = self.block.kernel(self.symbol(hint), list(inputs), list(outputs),
                               result_names=[_sanitize(hint or self.hint)] * len(outputs))
        self.stamp(kb.op)
        return kb

    def _last(self) -> Value:
        op = self.block.ops[-1]
        self.stamp(op)
        return op.results[0]

    # Composition ops: no arithmetic, so no kernel. Their result types are the ops' own inference
    # (`Op.infer_result_types`), except where the framework states the shape: a reshape's or broadcast's
    # target, and a slice's (whose extent the caller writes in the framework's terms, e.g. `-1 + B`).
    def reshape(self, x: Value, shape: Shape) -> Value:
        t = _type(x)
        if _same_shape(t.shape, shape):
            return x
        self.block.reshape(x, ttype(shape, t.dtype), hint="view")
        return self._last()

    def permute(self, x: Value, perm: Sequence[int]) -> Value:
        t = _type(x)
        perm = list(perm)
        if perm == list(range(t.rank)):
            return x
        self.block.permute(x, perm, hint="perm")
        return self._last()

    def flip(self, x: Value, dims: Iterable[int]) -> Value:
        """`x` reversed along `dims` (a view: torch.flip and jax.lax.rev give the same IR)."""
        axes = sorted(set(dims))
        if not axes:
            return x
        self.block.generic(FlipOp, [x], {"dims": axes}, hint="flip")
        return self._last()

    def roll(self, x: Value, shifts: Sequence[int], dims: Sequence[int]) -> Value:
        """`x` rotated by each shift along its dimension (a view), shifts taken modulo known sizes."""
        t = _type(x)
        kept = [(d, s % n) for s, d in zip(shifts, dims, strict=True) if isinstance(n := t.shape[d], int) and n
                and s % n]
        if not kept:
            return x
        self.block.generic(RollOp, [x], {"dims": [d for d, _ in kept], "shifts": [s for _, s in kept]}, hint="roll")
        return self._last()

    def broadcast_to(self, x: Value, shape: Shape) -> Value:
        t = _type(x)
        if _same_shape(t.shape, shape):
            return x
        off = len(shape) - t.rank
        self.block.broadcast(x, [k + off for k in range(t.rank)], ttype(shape, t.dtype), hint="bcast")
        return self._last()

    def slice(self, x: Value, entries: Sequence[SliceEntry], shape: Shape) -> Value:
        t = _type(x)
        self.block.slice(x, list(entries), ttype(shape, t.dtype), hint="slice")
        return self._last()

    def insert(self, value: Value, dest: Value, entries: Sequence[SliceEntry]) -> Value:
        self.block.insert(value, dest, list(entries), hint="ins")
        return self._last()

    def concat(self, xs: Sequence[Value], axis: int) -> Value:
        if len(xs) == 1:
            return xs[0]
        first = _type(xs[0])
        for x in xs[1:]:
            t = _type(x)
            for k, (a, b) in enumerate(zip(first.shape, t.shape, strict=False)):
                # Export checked these sizes equal at the traced sizes only (a skip connection meeting an
                # upsampled tensor: `D floordiv 2` and `2 * (D floordiv 4)`); the IR needs them equal for all.
                if k != axis and not dims_equal(a, b):
                    raise LoweringError(f"the operands of a concatenation have sizes {format_dim(a)} and "
                                        f"{format_dim(b)} along dim {k}, which are equal only for some sizes")
        self.block.concat(list(xs), axis, hint="cat")
        return self._last()

    def gather(self, table: Value, idx: Value, axis: int) -> Value:
        self.block.gather(table, idx, axis, hint="gather")
        return self._last()

    def scatter(self, dest: Value, idx: Value, src: Value, axis: int, reduce: str) -> Value:
        self.block.scatter(dest, idx, src, axis, reduce, hint="scatter")
        return self._last()

    def data_op(self, cls: type[GenericOp], args: Sequence[Value], types: Sequence[TensorType],
                attrs: dict[str, Any], hint: str) -> list[Value]:
        """A data-dependent op (solar.ir.ops.select) with its result types: its own unit of execution."""
        op = cls(list(args), list(types), attrs)
        self.block.op_results(op, hint, infer=False)
        self.stamp(op)
        return list(op.results)

    def constant(self, value: Scalar | list, shape: Shape, dtype: DType) -> Value:
        if any(isinstance(d, int) and d == 0 for d in shape):
            value = 0  # an empty tensor (a KV cache before its first append): a splat of its type, no list
        if not isinstance(value, list):
            value = lit(value, dtype).value  # type: ignore[attr-defined]
        self.block.constant(value, ttype(shape, dtype), hint="cst")
        return self._last()


def is_empty(v: Value) -> bool:
    """An empty tensor: a dimension of size 0 (docs/ir.md, "Empty tensors")."""
    return v.type is not None and any(isinstance(d, int) and d == 0 for d in v.type.shape)


def _same_shape(a: Sequence[Dim], b: Sequence[Dim]) -> bool:
    return len(a) == len(b) and all(dims_equal(x, y) for x, y in zip(a, b, strict=True))


def _type(v: Value) -> TensorType:
    assert v.type is not None
    return v.type


def vtype(v: Value) -> TensorType:
    return _type(v)


def _sanitize(name: str) -> str:
    out = "".join(ch if ch.isalnum() or ch in "_." else "_" for ch in name)
    return out if out and not out[0].isdigit() else "k" + out


# ---- loop nests ------------------------------------------------------------------------------------


@contextmanager
def loops(kb: KernelBuilder, shape: Sequence[Dim | Expr], prefix: str = "i",
          lower: Sequence[Expr | int] | None = None) -> Iterator[list[Expr]]:
    """Opens one `affine.for` per dimension (outermost first); yields the index expressions."""
    with ExitStack() as stack:
        idx: list[Expr] = []
        for k, d in enumerate(shape):
            lo = lower[k] if lower is not None else 0
            idx.append(stack.enter_context(kb.loop(f"{prefix}{k}", lo, dexpr(d))))
        yield idx


@contextmanager
def guard(kb: KernelBuilder, cond: Expr | None) -> Iterator[None]:
    if cond is None:
        yield
    else:
        with kb.guard(cond):
            yield


def access(name: str, idx: Sequence[Expr]) -> Access:
    return Access(name, tuple(idx))


# ---- templates -------------------------------------------------------------------------------------


def pointwise(em: Emitter, inputs: Sequence[Operand], out_dtype: DType,
              fn: Callable[[list[Expr]], Expr], compute: DType | None = None,
              result: DType | None = None, out_shape: Shape | None = None, hint: str | None = None,
              raw: Sequence[int] = ()) -> Value:
    """One kernel `Y[i...] = fn(inputs[i...])` with numpy broadcasting.

    Tensor inputs are read converted to `compute` (default: `out_dtype`); python scalars become literals of
    that type; inputs at the positions in `raw` (conditions, indices) are read in their own type. `fn`
    returns a value of type `result` (default: `compute`), converted to `out_dtype`."""
    compute = compute or out_dtype
    result = result or compute
    tensors = [x for x in inputs if isinstance(x, Value)]
    shape = out_shape if out_shape is not None else broadcast_shapes(*[_type(x).shape for x in tensors])
    bindings: list[tuple[Value, str]] = []
    names: dict[int, str] = {}
    for x in tensors:
        if id(x) not in names:
            names[id(x)] = _tensor_name(len(bindings))
            bindings.append((x, names[id(x)]))
    kb = em.kernel(bindings, [("Y", ttype(shape, out_dtype))], hint)
    with loops(kb, shape) as idx:
        args: list[Expr] = []
        for pos, x in enumerate(inputs):
            if isinstance(x, Value):
                t = _type(x)
                want = t.dtype if pos in raw else compute
                args.append(cast(access(names[id(x)], bcast_index(t.shape, shape, idx)), t.dtype, want))
            elif isinstance(x, Expr):
                args.append(cast(x, DType.I64, compute))  # a symbolic size used as a number (x / x.size(0))
            elif isinstance(x, SizeFloat):
                args.append(cast(x.expr, DType.F64, compute))
            else:
                args.append(lit(x, compute))
        kb.assign(access("Y", idx), cast(fn(args), result, out_dtype))
    return kb.results[0]


def _tensor_name(k: int) -> str:
    return "ABCDEFGHJKLMNOPQRSTUVWZ"[k] if k < 23 else f"T{k}"


REDUCE_OPS = {"sum": "+=", "prod": "*=", "max": "max=", "min": "min="}


@dataclass
class Reduction:
    """What a reduction kernel computes per output element: `kind` over `value(x)`, then `finish(acc)`."""

    kind: str  # 'sum', 'prod', 'max', 'min'
    value: Callable[[Expr], Expr] = lambda x: x
    finish: Callable[[Expr], Expr] | None = None
    acc: DType | None = None  # accumulator type (default: acc_dtype of the output)


def reduce_kernel(em: Emitter, x: Value, dims: Sequence[int], keepdim: bool, out_dtype: DType,
                  red: Reduction, read_dtype: DType | None = None, hint: str | None = None) -> Value:
    """One kernel reducing `x` over `dims`; elements are read converted to `read_dtype` (default: the
    accumulator type)."""
    t = _type(x)
    dims = sorted({norm_dim(d, t.rank) for d in dims}) if t.rank else []
    kept = [k for k in range(t.rank) if k not in dims]
    out_shape = reduced_shape(t.shape, dims, keepdim)
    acc_t = red.acc or acc_dtype(out_dtype)
    read = read_dtype or acc_t
    kb = em.kernel([(x, "X")], [("Y", ttype(out_shape, out_dtype))], hint)
    direct = red.finish is None and acc_t == out_dtype
    acc_name = "Y" if direct else "acc"
    if not direct:
        kb.local("acc", ttype([t.shape[k] for k in kept], acc_t))
    with loops(kb, [t.shape[k] for k in kept], "i") as kidx:
        with loops(kb, [t.shape[k] for k in dims], "r") as ridx:
            full = _merge(t.rank, kept, kidx, dims, ridx)
            target = access(acc_name, out_index(kidx, kept, dims, keepdim) if direct else kidx)
            kb.reduce(target, REDUCE_OPS[red.kind], red.value(cast(access("X", full), t.dtype, read)))
        if not direct:
            value: Expr = access("acc", kidx)
            if red.finish is not None:
                value = red.finish(value)
            kb.assign(access("Y", out_index(kidx, kept, dims, keepdim)), cast(value, acc_t, out_dtype))
    return kb.results[0]


def reduced_shape(shape: Shape, dims: Sequence[int], keepdim: bool) -> Shape:
    return tuple(1 if k in dims else d for k, d in enumerate(shape) if keepdim or k not in dims)


def out_index(kidx: Sequence[Expr], kept: Sequence[int], dims: Sequence[int], keepdim: bool) -> list[Expr]:
    if not keepdim:
        return list(kidx)
    rank = len(kept) + len(dims)
    return _merge(rank, kept, kidx, dims, [IntLit(0)] * len(dims))


def _merge(rank: int, kept: Sequence[int], kidx: Sequence[Expr], dims: Sequence[int],
           ridx: Sequence[Expr]) -> list[Expr]:
    full: list[Expr] = [IntLit(0)] * rank
    for k, i in zip(kept, kidx, strict=True):
        full[k] = i
    for k, i in zip(dims, ridx, strict=True):
        full[k] = i
    return full


def count_expr(dims: Sequence[Dim], dtype: DType) -> Expr:
    """The number of reduced elements as a `dtype` value (a literal when static)."""
    n = prod_dims(dims)
    if isinstance(n, int):
        return lit(n, dtype)
    return Cast(dtype, n)


def arg_reduce(em: Emitter, x: Value, dim: int | None, keepdim: bool, kind: str, hint: str | None = None,
               with_values: bool = False) -> list[Value]:
    """argmax/argmin (and max/min with indices): the first index reaching the extreme, as torch returns.

    Two passes in one kernel: the extreme value, then the least index whose element equals it."""
    t = _type(x)
    if dim is None:
        dims = list(range(t.rank))
        out_shape: Shape = tuple(1 for _ in t.shape) if keepdim else ()
    else:  # dim 0 of a 0-d tensor names its one element: nothing is reduced
        dims = [norm_dim(dim, t.rank)] if t.rank else []
        out_shape = reduced_shape(t.shape, dims, keepdim)
    kept = [k for k in range(t.rank) if k not in dims]
    outs: list[tuple[str, TensorType]] = [("I", ttype(out_shape, DType.I64))]
    if with_values:
        outs.insert(0, ("V", ttype(out_shape, t.dtype)))
    kb = em.kernel([(x, "X")], outs, hint)
    kb.local("ext", ttype([t.shape[k] for k in kept], t.dtype))
    red_shape = [t.shape[k] for k in dims]
    n = prod_dims(red_shape)
    with loops(kb, [t.shape[k] for k in kept], "i") as kidx:
        with loops(kb, red_shape, "r") as ridx:
            full = _merge(t.rank, kept, kidx, dims, ridx)
            kb.reduce(access("ext", kidx), "max=" if kind == "max" else "min=", access("X", full))
        oidx = [IntLit(0)] * len(out_shape) if dim is None else out_index(kidx, kept, dims, keepdim)
        with loops(kb, red_shape, "r") as ridx:
            full = _merge(t.rank, kept, kidx, dims, ridx)
            flat = linear_index(ridx, tuple(red_shape))
            kb.reduce(access("I", oidx), "min=",
                      select(Binary("==", access("X", full), access("ext", kidx)), flat,
                             IntLit(n) if isinstance(n, int) else IntLit(1 << 62)))
        if with_values:
            kb.assign(access("V", oidx), access("ext", kidx))
    return list(kb.results)


def as_index(e: Expr | int) -> Expr:
    return as_expr(e)


def index_ref(name: str) -> IndexRef:
    return IndexRef(name)


def param(name: str) -> NameRef:
    return NameRef(name)


# ---- type promotion --------------------------------------------------------------------------------


def _category(d: DType) -> int:
    return 0 if d.is_bool else 1 if d.is_int else 2


def _widest(dtypes: Sequence[DType]) -> DType:
    out = dtypes[0]
    for d in dtypes[1:]:
        if d == out:
            continue
        if {d, out} == {DType.BF16, DType.F16}:
            out = DType.F32
        elif d.itemsize > out.itemsize:
            out = d
    return out


def promote(*xs: Operand | None) -> DType:
    """torch's result type: the highest category (bool < int < float) wins; within it, dimensioned tensors
    decide before zero-dim tensors, which decide before python scalars (float32 / int64 defaults)."""
    dims = [x.type.dtype for x in xs if isinstance(x, Value) and x.type is not None and x.type.rank > 0]
    zeros = [x.type.dtype for x in xs if isinstance(x, Value) and x.type is not None and x.type.rank == 0]
    scalars = [DType.I1 if isinstance(x, bool) else DType.I64 if isinstance(x, int | Expr) else DType.F32
               for x in xs if isinstance(x, int | float | bool | Expr | SizeFloat)]
    top = max(_category(d) for d in [*dims, *zeros, *scalars])
    for group in (dims, zeros):
        cands = [d for d in group if _category(d) == top]
        if cands:
            return _widest(cands)
    return {0: DType.I1, 1: DType.I64, 2: DType.F32}[top]
