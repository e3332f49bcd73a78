"""The data ops of the composition level with a syntax of their own: constants, slices and inserts. Each
infers its result type from its operands (`infer_result_types`), which `verify` checks against the type it
declares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..diagnostics import UNKNOWN, Location
from ..expr import Binary, Expr, IntLit, constant_value, format_expr
from ..expr_values import evaluate_int
from ..index_map import IndexMap, NotAffine, Window, WindowDim
from ..printer import Printer, format_attr_value
from ..types import Dim, TensorType, canonical_dim, types_equal
from ..verify_base import dim_value, expr_value
from .base import ExprFn, Op, TypeFn, Value

if TYPE_CHECKING:
    from ..verifier import Verifier

Literal = int | float | bool | list


class TypedOp(Op):
    """An op with one result whose type it keeps in `type` (constants, slices, inserts)."""

    __slots__ = ()
    backend_hooks = "solar.backends.composition_hooks:HOOKS"
    type: TensorType

    def declared_types(self) -> list[TensorType]:
        return [self.type]

    def set_declared_types(self, types: list[TensorType]) -> None:
        [self.type] = types

    def map_types(self, fn: TypeFn) -> None:
        self.type = fn(self.type)


class ConstantOp(TypedOp):
    """A splat scalar or a nested list literal."""

    opname = "solar.constant"
    is_view = True  # no data moves to make it: a constant is folded into whatever reads it
    __slots__ = ("type", "value")

    def __init__(self, value: Literal, type: TensorType, loc: Location = UNKNOWN) -> None:
        super().__init__(loc)
        self.value = value
        self.type = type

    def print(self, p: Printer, indent: int) -> None:
        p.out.append(f"{'  ' * indent}{p.lhs(self)}solar.constant {format_attr_value(self.value)} : {self.type}"
                     f"{p.src_loc(self)}\n")

    def verify(self, v: Verifier, for_vars: set[str]) -> None:
        kind = self.type.dtype
        if isinstance(self.value, list):
            if not self.type.is_static:
                v.error("a list constant needs a static shape", self.loc)
                return
            shape = _list_shape(self.value)
            if shape is None:
                v.error("constant list is ragged: every row must have the same length", self.loc)
                return
            if shape != self.type.concrete_shape():
                v.error(f"constant literal has shape {list(shape)} but the type is {self.type}", self.loc)
            leaves = _leaves(self.value)
        else:
            leaves = [self.value]
        for leaf in leaves:
            if isinstance(leaf, bool) != kind.is_bool or (isinstance(leaf, float) and not kind.is_float):
                v.error(f"constant value {leaf!r} does not fit element type {kind}", self.loc)
                break


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


@dataclass(slots=True)
class SliceEntry:
    """One dimension of a slice: `index` alone (drops the dim) or `start:stop:step` (None = default)."""

    index: Expr | None = None
    start: Expr | None = None
    stop: Expr | None = None
    step: Expr | None = None
    loc: Location = field(default=UNKNOWN)

    @property
    def is_index(self) -> bool:
        return self.index is not None

    def mapped(self, fn: ExprFn) -> SliceEntry:
        def f(x: Expr | None) -> Expr | None:
            return fn(x) if x is not None else None

        return SliceEntry(f(self.index), f(self.start), f(self.stop), f(self.step), self.loc)


def format_slice(entries: list[SliceEntry]) -> str:
    parts = []
    for e in entries:
        if e.index is not None:
            parts.append(format_expr(e.index))
            continue
        text = (format_expr(e.start) if e.start is not None else "") + ":"
        text += format_expr(e.stop) if e.stop is not None else ""
        if e.step is not None:
            text += ":" + format_expr(e.step)
        parts.append(text)
    return "[" + ", ".join(parts) + "]"


def slice_shape(v: Verifier, entries: list[SliceEntry], source: TensorType, for_vars: set[str] | None,
                loc: Location, what: str) -> list[Dim] | None:
    """The shape `entries` cut from a tensor of type `source`, or None after reporting why there is none.
    With `for_vars` (the loop indices in scope) the entries' affinity is checked too."""
    if len(entries) != source.rank:
        v.error(f"{what} has {len(entries)} entries but the tensor has rank {source.rank}", loc)
        return None
    shape: list[Dim] = []
    ok = True
    for entry, dim in zip(entries, source.shape, strict=True):
        if for_vars is not None:
            for e in (entry.index, entry.start, entry.stop, entry.step):
                if e is not None:
                    ok = v.check_affine(e, for_vars, e.loc, f"a {what} entry") and ok
        if entry.is_index:
            continue
        step = 1
        if entry.step is not None:
            value = constant_value(entry.step)
            if value is None or value <= 0:
                v.error(f"{what} step `{format_expr(entry.step)}` must be a positive constant", entry.step.loc)
                ok = False
                continue
            step = value
        start = entry.start if entry.start is not None else IntLit(0)
        stop = entry.stop if entry.stop is not None else (IntLit(dim) if isinstance(dim, int) else dim)
        if not _in_bounds(v, start, stop, dim, entry, what):
            ok = False
            continue
        extent: Expr = stop if constant_value(start) == 0 else Binary("-", stop, start)
        if step != 1:
            extent = Binary("ceildiv", extent, IntLit(step))
        shape.append(canonical_dim(extent))
    return shape if ok else None


def _in_bounds(v: Verifier, start: Expr, stop: Expr, dim: Dim, entry: SliceEntry, what: str) -> bool:
    """Checks `start:stop` (or a single index) against the dimension where the values are known (constants,
    or size parameters with defaults); loop-dependent entries are checked when the program runs."""
    size = dim_value(dim, v.defaults)
    if size is None:
        return True
    if entry.index is not None:
        index = expr_value(entry.index, v.defaults)
        if index is not None and not 0 <= index < size:
            v.error(f"{what} index {format_expr(entry.index)} is outside a dimension of size {size}", entry.loc)
            return False
        return True
    lo, hi = expr_value(start, v.defaults), expr_value(stop, v.defaults)
    if lo is not None and hi is not None and not 0 <= lo <= hi <= size:
        v.error(f"{what} range {format_expr(start)}:{format_expr(stop)} is not a range within a "
                f"dimension of size {size}", entry.loc)
        return False
    return True


class _SlicingOp(TypedOp):
    """A typed op addressing part of a tensor through its slice `entries`."""

    __slots__ = ()
    entries: list[SliceEntry]

    def map_exprs(self, fn: ExprFn) -> None:
        self.entries = [e.mapped(fn) for e in self.entries]


class SliceOp(_SlicingOp):
    opname = "solar.slice"
    is_view = True
    forwards_values = True
    __slots__ = ("entries", "source", "type")

    def __init__(self, source: Value, entries: list[SliceEntry], type: TensorType, loc: Location = UNKNOWN) -> None:
        super().__init__(loc)
        self.source = source
        self.entries = entries
        self.type = type

    @property
    def operands(self) -> list[Value]:
        return [self.source]

    def set_operand(self, k: int, value: Value) -> None:
        if k != 0:
            raise IndexError(f"solar.slice has one operand, not {k + 1}")
        self.source = value

    def print(self, p: Printer, indent: int) -> None:
        p.out.append(f"{'  ' * indent}{p.lhs(self)}solar.slice %{self.source.name}{format_slice(self.entries)} : "
                     f"{self.type}{p.src_loc(self)}\n")

    def _infer(self, v: Verifier, for_vars: set[str] | None) -> list[TensorType] | None:
        src = self.source.type
        if src is None:
            return None
        shape = slice_shape(v, self.entries, src, for_vars, self.loc, "slice")
        return None if shape is None else [TensorType(tuple(shape), src.dtype)]

    def infer_result_types(self, v: Verifier) -> list[TensorType] | None:
        return self._infer(v, None)

    def verify(self, v: Verifier, for_vars: set[str]) -> None:
        expected = self._infer(v, for_vars)
        if expected is not None:
            v.expect_type(self, expected[0], self.type)

    def index_map(self, values: Mapping[str, int]) -> IndexMap:
        def number(e: Expr | None, default: int) -> int:
            if e is None:
                return default
            try:
                return evaluate_int(e, dict(values))
            except (KeyError, TypeError, ValueError) as err:
                raise NotAffine("a slice bound that is not a number: not modelled") from err

        return Window(tuple(WindowDim(index=number(e.index, 0)) if e.index is not None
                            else WindowDim(start=number(e.start, 0), step=number(e.step, 1)) for e in self.entries))


class InsertOp(_SlicingOp):
    opname = "solar.insert"
    moves_data = True
    __slots__ = ("dest", "entries", "type", "value")

    def __init__(self, value: Value, dest: Value, entries: list[SliceEntry], type: TensorType,
                 loc: Location = UNKNOWN) -> None:
        super().__init__(loc)
        self.value = value
        self.dest = dest
        self.entries = entries
        self.type = type

    @property
    def operands(self) -> list[Value]:
        return [self.value, self.dest]

    def set_operand(self, k: int, value: Value) -> None:
        if k == 0:
            self.value = value
        elif k == 1:
            self.dest = value
        else:
            raise IndexError(f"solar.insert has two operands, not {k + 1}")

    def print(self, p: Printer, indent: int) -> None:
        p.out.append(f"{'  ' * indent}{p.lhs(self)}solar.insert %{self.value.name} into %{self.dest.name}"
                     f"{format_slice(self.entries)} : {self.type}{p.src_loc(self)}\n")

    def infer_result_types(self, v: Verifier) -> list[TensorType] | None:
        return None if self.dest.type is None else [self.dest.type]

    def verify(self, v: Verifier, for_vars: set[str]) -> None:
        dest, value = self.dest.type, self.value.type
        if dest is None or value is None:
            return
        v.expect_type(self, dest, self.type)
        shape = slice_shape(v, self.entries, dest, for_vars, self.loc, "insert")
        if shape is not None:
            expected = TensorType(tuple(shape), dest.dtype)
            if not types_equal(expected, value):
                v.error(f"inserted value %{self.value.name} has type {value} but the slice is {expected}",
                        self.use_loc(self.value))
