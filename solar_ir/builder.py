"""The builder API: how passes and frontends make IR (never by pasting strings).

    mb = ModuleBuilder("mlp")
    f = mb.func("forward", [("x", tensor("64x512xf32")), ("w", tensor("1024x512xf32"))])
    x, w = f.args
    k = f.kernel("fc", [(x, "X"), (w, "W")], [("H", tensor("64x1024xf32"))])
    with k.loop("i", 0, 64) as i, k.loop("j", 0, 1024) as j, k.loop("k", 0, 512) as r:
        k.reduce(k["H"][i, j], "+=", k["X"][i, r] * k["W"][j, r])
    f.ret(k.results[0])
    module = mb.module
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .dtypes import DType
from .expr import Access, Binary, Call, Cast, Expr, ExprLike, IndexRef, as_expr
from .ops import (
    AffineFor,
    AffineIf,
    Assign,
    Binding,
    BroadcastOp,
    CallOp,
    ConcatOp,
    ConstantOp,
    EinsumOp,
    EinsumStmt,
    ForOp,
    FuncOp,
    GatherOp,
    GenericOp,
    GroupOp,
    IfOp,
    InsertOp,
    KernelOp,
    KStmt,
    Literal,
    LocalDecl,
    ModuleOp,
    Op,
    Param,
    PermuteOp,
    ReshapeOp,
    ReturnOp,
    ScatterOp,
    SliceEntry,
    SliceOp,
    TensorDecl,
    Value,
    Word,
    YieldOp,
)
from .rewriter import NameGenerator
from .types import TensorType, parse_tensor_type
from .verifier import infer_result_types

# The type of an op built without one, until inference fills it in.
_PENDING = TensorType((), DType.F32)


def cmp(lhs: ExprLike, op: str, rhs: ExprLike) -> Expr:
    """A comparison (`==`, `!=`, `<`, `<=`, `>`, `>=`) or a logical `and`/`or`: `cmp(j, "<=", i)`."""
    return Binary(op, as_expr(lhs), as_expr(rhs))


def call(func: str, *args: ExprLike) -> Expr:
    """A scalar function: `call("exp", x)`, `call("max", a, 0.0)`, `call("select", c, a, b)`."""
    return Call(func, tuple(as_expr(a) for a in args))


def cast(dtype: DType, operand: ExprLike) -> Expr:
    return Cast(dtype, as_expr(operand))


def tensor(spec: str) -> TensorType:
    """`tensor("64x512xf32")` or `tensor("tensor<64x512xf32>")`."""
    return parse_tensor_type(spec if spec.startswith("tensor<") else f"tensor<{spec}>")


class ModuleBuilder:
    def __init__(self, name: str | None = None, params: dict[str, int | None] | None = None) -> None:
        self.module = ModuleOp(name, [Param(k, v) for k, v in (params or {}).items()])

    def func(self, name: str, args: list[tuple[str, TensorType]]) -> FuncBuilder:
        names = NameGenerator()
        values = [Value(names.fresh(n), t) for n, t in args]
        func = FuncOp(name, values, [])
        self.module.funcs.append(func)
        return FuncBuilder(func, func.body, names)


class BlockBuilder:
    """Appends composition ops to one block (a function body or a region)."""

    def __init__(self, ops: list[Op], names: NameGenerator) -> None:
        self.ops = ops
        self.names = names

    def _add(self, op: Op, result_types: list[TensorType], hint: str | list[str]) -> Op:
        hints = hint if isinstance(hint, list) else [hint] * len(result_types)
        op.results = [Value(self.names.fresh(h), t, op) for h, t in zip(hints, result_types, strict=True)]
        self.ops.append(op)
        return op

    def kernel(self, symbol: str, inputs: list[tuple[Value, str]], outputs: list[tuple[str, TensorType]],
               result_names: list[str] | None = None) -> KernelBuilder:
        op = KernelOp(symbol, [Binding(v, n) for v, n in inputs], [TensorDecl(n, t) for n, t in outputs])
        self._add(op, [t for _, t in outputs], result_names or [n.lower() for n, _ in outputs])
        return KernelBuilder(op)

    def einsum(self, symbol: str, spec: str, inputs: list[tuple[Value, str]], output: tuple[str, TensorType],
               value: ExprLike, reduce: str | None = None, epilogue: ExprLike | None = None,
               where: str | None = None, result_name: str | None = None) -> Value:
        """`reduce` is '+=', '*=', 'max=', 'min=' or None (a map); `epilogue` may read the result by name."""
        out_name, out_type = output
        body = [EinsumStmt(out_name, reduce or "=", as_expr(value))]
        if epilogue is not None:
            body.append(EinsumStmt(out_name, "=", as_expr(epilogue)))
        op = EinsumOp(symbol, spec, [Binding(v, n) for v, n in inputs], [TensorDecl(out_name, out_type)], body, where)
        return self._add(op, [out_type], result_name or out_name.lower()).results[0]

    def call(self, callee: str, args: list[Value], result_types: list[TensorType], hint: str = "r") -> list[Value]:
        return self._add(CallOp(callee, args, result_types), result_types, hint).results

    def constant(self, value: Literal, type: TensorType, hint: str = "c") -> Value:
        return self._add(ConstantOp(value, type), [type], hint).results[0]

    def slice(self, source: Value, entries: list[SliceEntry], type: TensorType | None = None,
              hint: str = "s") -> Value:
        return self.op(SliceOp(source, entries, type or _PENDING), hint, infer=type is None)

    def insert(self, value: Value, dest: Value, entries: list[SliceEntry], type: TensorType | None = None,
               hint: str = "u") -> Value:
        return self.op(InsertOp(value, dest, entries, type or _PENDING), hint, infer=type is None)

    def op(self, op: Op, hint: str, infer: bool = False) -> Value:
        """Appends an op built by hand (any composition op with one result); with `infer`, its result type is
        the one its operands and attributes give (`Op.infer_result_types`; InferenceError if none)."""
        [result] = self.op_results(op, hint, infer)
        return result

    def op_results(self, op: Op, hint: str | list[str], infer: bool = False) -> list[Value]:
        """`op` for an op with any number of results; `hint` names each (or all alike: `h`, `h_1`, ...)."""
        if infer:
            op.set_declared_types(infer_result_types(op))
        return self._add(op, op.declared_types(), hint).results

    def generic(self, cls: type[GenericOp], args: list[Value], attrs: dict[str, Any], type: TensorType | None = None,
                hint: str = "v") -> Value:
        """Appends a shape op of the generic syntax; without `type`, its result type is inferred."""
        return self.op(cls(args, [type] if type is not None else [], attrs), hint, infer=type is None)

    def generic_results(self, cls: type[GenericOp], args: list[Value], attrs: dict[str, Any],
                        types: list[TensorType] | None = None, hint: str | list[str] = "v") -> list[Value]:
        """`generic` for an op with several results (`GenericOp.result_count`)."""
        return self.op_results(cls(args, list(types or []), attrs), hint, infer=types is None)

    def reshape(self, source: Value, type: TensorType, hint: str = "r") -> Value:
        return self.generic(ReshapeOp, [source], {}, type, hint)

    def permute(self, source: Value, perm: list[int], type: TensorType | None = None, hint: str = "p") -> Value:
        return self.generic(PermuteOp, [source], {"perm": list(perm)}, type, hint)

    def concat(self, sources: list[Value], axis: int, type: TensorType | None = None, hint: str = "cat") -> Value:
        return self.generic(ConcatOp, sources, {"axis": axis}, type, hint)

    def broadcast(self, source: Value, dims: list[int], type: TensorType, hint: str = "b") -> Value:
        return self.generic(BroadcastOp, [source], {"dims": list(dims)}, type, hint)

    def gather(self, source: Value, indices: Value, axis: int, type: TensorType | None = None,
               hint: str = "g") -> Value:
        return self.generic(GatherOp, [source, indices], {"axis": axis}, type, hint)

    def scatter(self, dest: Value, indices: Value, source: Value, axis: int, reduce: str,
                type: TensorType | None = None, hint: str = "sc") -> Value:
        return self.generic(ScatterOp, [dest, indices, source], {"axis": axis, "reduce": Word(reduce)}, type, hint)

    @contextmanager
    def group(self, symbol: str, result_types: list[TensorType], hint: str = "g") -> Iterator[RegionBuilder]:
        op = GroupOp(symbol, result_types)
        region = RegionBuilder(op.body, self.names)
        yield region
        self._add(op, result_types, hint)
        region.results = op.results

    @contextmanager
    def for_(self, var: str, lower: ExprLike, upper: ExprLike, inits: list[Value],
             hint: str = "loop") -> Iterator[RegionBuilder]:
        """A `solar.for`; inside, `region.args` are the iteration arguments and `region.index` the index."""
        iter_args = [Value(self.names.fresh(f"{v.name}_it"), v.type) for v in inits]
        types = [v.type for v in inits if v.type is not None]
        op = ForOp(var, as_expr(lower), as_expr(upper), iter_args, list(inits), types)
        region = RegionBuilder(op.body, self.names, iter_args, IndexRef(var))
        yield region
        self._add(op, types, hint)
        region.results = op.results

    @contextmanager
    def if_(self, cond: Value, result_types: list[TensorType],
            hint: str = "sel") -> Iterator[tuple[RegionBuilder, RegionBuilder]]:
        op = IfOp(cond, result_types)
        then, other = RegionBuilder(op.then_body, self.names), RegionBuilder(op.else_body, self.names)
        yield then, other
        self._add(op, result_types, hint)
        then.results = other.results = op.results


class FuncBuilder(BlockBuilder):
    def __init__(self, func: FuncOp, ops: list[Op], names: NameGenerator) -> None:
        super().__init__(ops, names)
        self.func = func
        names.taken.update(a.name for a in func.args)

    @property
    def args(self) -> list[Value]:
        return self.func.args

    def ret(self, *values: Value) -> None:
        if not values:
            raise ValueError("a function returns at least one value (SIR is pure)")
        self.func.result_types = [v.type for v in values if v.type is not None]
        self.ops.append(ReturnOp(list(values)))


class RegionBuilder(BlockBuilder):
    def __init__(self, ops: list[Op], names: NameGenerator, args: list[Value] | None = None,
                 index: IndexRef | None = None) -> None:
        super().__init__(ops, names)
        self.args = args or []
        self.index = index
        self.results: list[Value] = []  # filled when the region's `with` block ends

    def yield_(self, *values: Value) -> None:
        if not values:
            raise ValueError("a region yields at least one value (SIR is pure)")
        self.ops.append(YieldOp(list(values)))


class _TensorHandle:
    def __init__(self, name: str) -> None:
        self.name = name

    def __getitem__(self, indices: ExprLike | tuple[ExprLike, ...]) -> Access:
        if not isinstance(indices, tuple):
            indices = (indices,)
        return Access(self.name, tuple(as_expr(i) for i in indices))


class KernelBuilder:
    """Builds the loop nest of a kernel; loops and guards nest with `with`."""

    def __init__(self, op: KernelOp) -> None:
        self.op = op
        self._stack: list[list[KStmt]] = [op.body]

    @property
    def results(self) -> list[Value]:
        return self.op.results

    def __getitem__(self, name: str) -> _TensorHandle:
        return _TensorHandle(name)

    def local(self, name: str, type: TensorType) -> _TensorHandle:
        self._stack[-1].append(LocalDecl(TensorDecl(name, type)))
        return _TensorHandle(name)

    @contextmanager
    def loop(self, var: str, lower: ExprLike, upper: ExprLike, step: int = 1) -> Iterator[IndexRef]:
        loop = AffineFor(var, as_expr(lower), as_expr(upper), step)
        self._stack[-1].append(loop)
        self._stack.append(loop.body)
        try:
            yield IndexRef(var)
        finally:
            self._stack.pop()

    @contextmanager
    def guard(self, cond: Expr) -> Iterator[None]:
        stmt = AffineIf(cond)
        self._stack[-1].append(stmt)
        self._stack.append(stmt.body)
        try:
            yield
        finally:
            self._stack.pop()

    def assign(self, target: Access, value: ExprLike) -> None:
        self._stack[-1].append(Assign(target, "=", as_expr(value)))

    def reduce(self, target: Access, op: str, value: ExprLike) -> None:
        if op not in ("+=", "*=", "max=", "min="):
            raise ValueError(f"unknown reduction '{op}'")
        self._stack[-1].append(Assign(target, op, as_expr(value)))
