"""The shape ops written `%r = solar.NAME %a, ... {attrs} : type` (`GenericOp`): reshape, permute, flip,
roll, concat, broadcast, gather and scatter. Each class declares its operand count and attributes and infers its result
type (`infer`); the parser, printer and verifier need nothing more to handle a new one."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise
from typing import TYPE_CHECKING, ClassVar

from ..attr_values import AttrValue, Word
from ..diagnostics import UNKNOWN, Location
from ..expr import Binary, Expr
from ..index_map import Broadcast, Flip, IndexMap, Permutation, Regroup, Roll
from ..printer import Printer, format_attr_dict, format_attr_value, format_types, format_values
from ..types import Dim, TensorType, canonical_dim, dims_equal, format_dim, types_equal
from ..verify_base import as_expr, suggest
from .base import ArgsOp, TypeFn, Value

if TYPE_CHECKING:
    from ..verifier import Verifier

SCATTER_REDUCTIONS = ("none", "add", "mul", "max", "min")


class GenericOp(ArgsOp):
    """An op of the generic syntax. A subclass sets `opname` (the parser finds it by that name in
    `OP_CLASSES`; the grammar has one rule for every generic op), its `operand_count` (-1: one or more),
    `required` and `optional` attribute names, and implements `infer`; one with several results sets
    `result_count` and implements `infer_all` instead."""

    __slots__ = ("args", "result_types")
    backend_hooks = "solar.backends.composition_hooks:HOOKS"
    operand_count: ClassVar[int] = 1
    result_count: ClassVar[int] = 1
    # The operand read as indices into `axis` of the first operand (gather, scatter), if any.
    index_operand: ClassVar[int | None] = None
    required: ClassVar[tuple[str, ...]] = ()
    optional: ClassVar[tuple[str, ...]] = ()

    def __init__(self, args: list[Value], result_types: list[TensorType], attrs: dict[str, AttrValue] | None = None,
                 loc: Location = UNKNOWN) -> None:
        super().__init__(loc)
        self.args = args
        self.result_types = result_types
        if attrs:
            self.attrs.update(attrs)

    def set_declared_types(self, types: list[TensorType]) -> None:
        self.result_types = list(types)

    def map_types(self, fn: TypeFn) -> None:
        self.result_types = [fn(t) for t in self.result_types]

    def print(self, p: Printer, indent: int) -> None:
        args = " " + format_values(self.args) if self.args else ""
        attrs = " " + format_attr_dict(self.attrs) if self.attrs else ""
        p.out.append(f"{'  ' * indent}{p.lhs(self)}{self.opname}{args}{attrs} : {format_types(self.result_types)}"
                     f"{p.src_loc(self)}\n")

    def infer(self, v: Verifier, args: list[TensorType], declared: TensorType | None) -> TensorType | None:
        """The result type that operands of types `args` and the attributes give, or None after reporting
        why there is none. An op whose result shape is its own (reshape, broadcast) checks `declared`
        instead and returns None when it fits (or, when building, None for `declared`: an error)."""
        raise NotImplementedError

    def infer_all(self, v: Verifier, args: list[TensorType],
                  declared: list[TensorType] | None) -> list[TensorType] | None:
        """The types of all `result_count` results (`infer` for an op with one)."""
        one = self.infer(v, args, declared[0] if declared else None)
        return None if one is None else [one]

    def _signature(self, v: Verifier) -> bool | None:
        """Checks the operand count and attribute names against the class's: None when the count is wrong
        (nothing more can be checked), False when an attribute is."""
        count, required, optional = self.operand_count, self.required, self.optional
        if count >= 0 and len(self.args) != count:
            v.error(f"{self.opname} takes {count} operand(s), not {len(self.args)}", self.loc)
            return None
        if count < 0 and not self.args:
            v.error(f"{self.opname} needs at least one operand", self.loc)
            return None
        ok = True
        for key in self.attrs:
            if key not in required and key not in optional:
                v.error(f"{self.opname} has no attribute '{key}'{suggest(key, required + optional)}", self.loc)
                ok = False
        for key in required:
            if key not in self.attrs:
                v.error(f"{self.opname} needs the attribute '{key}'", self.loc)
                ok = False
        return ok

    def infer_result_types(self, v: Verifier) -> list[TensorType] | None:
        if not self._signature(v) or any(a.type is None for a in self.args):
            return None
        declared = self.result_types if len(self.result_types) == self.result_count else None
        expected = self.infer_all(v, [a.type for a in self.args if a.type is not None], declared)
        if expected is None and declared is None:
            v.error(f"{self.opname} needs its result type written out", self.loc)
        return expected

    def verify(self, v: Verifier, for_vars: set[str]) -> None:
        signature = self._signature(v)
        if signature is None:
            return
        if len(self.result_types) != self.result_count:
            count = "one result type" if self.result_count == 1 else f"{self.result_count} result types"
            v.error(f"{self.opname} has exactly {count}", self.loc)
            return
        if not signature or any(a.type is None for a in self.args):
            return
        expected = self.infer_all(v, [a.type for a in self.args if a.type is not None], self.result_types)
        if expected is not None:
            for inferred, declared in zip(expected, self.result_types, strict=True):
                v.expect_type(self, inferred, declared)

    def indexed_dim(self, value: Value) -> Dim | None:
        k = self.index_operand
        if k is None or len(self.args) <= k or self.args[k] is not value:
            return None
        source, axis = self.args[0].type, self.attrs.get("axis")
        if source is None or not isinstance(axis, int) or not 0 <= axis < source.rank:
            return None
        return source.shape[axis]

    def axis(self, v: Verifier, rank: int) -> int | None:
        """The `axis` attribute, checked against `rank`."""
        axis = self.attrs.get("axis")
        if not isinstance(axis, int) or isinstance(axis, bool) or not 0 <= axis < rank:
            v.error(f"{self.opname} axis must be an integer in [0, {rank}), not {format_attr_value(axis)}", self.loc)
            return None
        return axis


class ReshapeOp(GenericOp):
    opname = "solar.reshape"
    is_view = True
    forwards_values = True
    __slots__ = ()

    def infer(self, v: Verifier, args: list[TensorType], declared: TensorType | None) -> TensorType | None:
        src = args[0]
        if declared is None:
            return None
        if src.dtype != declared.dtype:
            return declared.with_dtype(src.dtype)
        try:
            before, after = src.num_elements(v.module_defaults), declared.num_elements(v.module_defaults)
        except (KeyError, ValueError):
            return None  # symbolic sizes without values: checked when bound
        if before != after:
            v.error(f"solar.reshape changes the element count from {before} ({src}) to {after} ({declared})",
                    self.loc)
        return None

    def index_map(self, values: Mapping[str, int]) -> IndexMap:
        return Regroup()


class PermuteOp(GenericOp):
    opname = "solar.permute"
    is_view = True
    forwards_values = True
    required = ("perm",)
    __slots__ = ()

    def infer(self, v: Verifier, args: list[TensorType], declared: TensorType | None) -> TensorType | None:
        perm = self.attrs["perm"]
        src = args[0]
        if not (isinstance(perm, list) and all(isinstance(p, int) and not isinstance(p, bool) for p in perm)
                and sorted(perm) == list(range(src.rank))):
            v.error(f"solar.permute perm {format_attr_value(perm)} is not a permutation of 0..{src.rank - 1}",
                    self.loc)
            return None
        return TensorType(tuple(src.shape[p] for p in perm), src.dtype)

    def index_map(self, values: Mapping[str, int]) -> IndexMap:
        return Permutation(tuple(self.attrs["perm"]))


class ConcatOp(GenericOp):
    opname = "solar.concat"
    moves_data = True
    forwards_values = True
    operand_count = -1
    required = ("axis",)
    optional = ("append",)  # true: the later operands are appended to the first in place (a KV cache)
    __slots__ = ()

    def infer(self, v: Verifier, args: list[TensorType], declared: TensorType | None) -> TensorType | None:
        first = args[0]
        axis = self.axis(v, first.rank)
        if axis is None:
            return None
        total: Expr | int | None = None
        for a, value in zip(args, self.args, strict=True):
            if a.rank != first.rank or a.dtype != first.dtype or not all(
                    dims_equal(x, y) for d, (x, y) in enumerate(zip(a.shape, first.shape, strict=True)) if d != axis):
                v.error(f"solar.concat operand %{value.name} of type {a} does not match {first} outside axis {axis}",
                        self.use_loc(value))
                return None
            dim = a.shape[axis]
            total = dim if total is None else Binary("+", as_expr(total), as_expr(dim))
        assert total is not None
        shape = list(first.shape)
        shape[axis] = canonical_dim(as_expr(total))
        return TensorType(tuple(shape), first.dtype)


class BroadcastOp(GenericOp):
    opname = "solar.broadcast"
    is_view = True
    forwards_values = True
    required = ("dims",)
    __slots__ = ()

    def infer(self, v: Verifier, args: list[TensorType], declared: TensorType | None) -> TensorType | None:
        if declared is None:
            return None
        dims = self.attrs["dims"]
        src = args[0]
        if not (isinstance(dims, list) and len(dims) == src.rank and all(isinstance(d, int) for d in dims)
                and all(0 <= d < declared.rank for d in dims) and all(a < b for a, b in pairwise(dims))):
            v.error(f"solar.broadcast dims {format_attr_value(dims)} must be {src.rank} increasing result "
                    "dimensions "
                    f"below {declared.rank}", self.loc)
            return None
        if src.dtype != declared.dtype:
            return declared.with_dtype(src.dtype)
        for i, d in enumerate(dims):
            if not (dims_equal(src.shape[i], 1) or dims_equal(src.shape[i], declared.shape[d])):
                v.error(f"solar.broadcast cannot stretch input dimension {i} of size {format_dim(src.shape[i])} "
                        f"to {format_dim(declared.shape[d])}", self.loc)
        return None

    def index_map(self, values: Mapping[str, int]) -> IndexMap:
        return Broadcast(tuple(self.attrs["dims"]))


class FlipOp(GenericOp):
    """`solar.flip %x {dims = [...]}`: `%x` with the order of its elements reversed along each of `dims` (a
    view: index i of such a dimension of size n reads n - 1 - i)."""

    opname = "solar.flip"
    is_view = True
    forwards_values = True
    required = ("dims",)
    __slots__ = ()

    def infer(self, v: Verifier, args: list[TensorType], declared: TensorType | None) -> TensorType | None:
        dims = self.attrs["dims"]
        src = args[0]
        if not (isinstance(dims, list) and all(isinstance(d, int) and not isinstance(d, bool) for d in dims)
                and all(0 <= d < src.rank for d in dims) and len(set(dims)) == len(dims)):
            v.error(f"solar.flip dims {format_attr_value(dims)} must be distinct dimensions below {src.rank}",
                    self.loc)
            return None
        return src

    def index_map(self, values: Mapping[str, int]) -> IndexMap:
        return Flip(tuple(self.attrs["dims"]))


class RollOp(GenericOp):
    """`solar.roll %x {dims = [...], shifts = [...]}`: `%x` rotated by each shift along its dimension (a view:
    index i of such a dimension of size n reads (i - shift) mod n)."""

    opname = "solar.roll"
    is_view = True
    forwards_values = True
    required = ("dims", "shifts")
    __slots__ = ()

    def infer(self, v: Verifier, args: list[TensorType], declared: TensorType | None) -> TensorType | None:
        dims, shifts = self.attrs["dims"], self.attrs["shifts"]
        src = args[0]
        ints = all(isinstance(d, int) and not isinstance(d, bool) for d in [*dims, *shifts]) \
            if isinstance(dims, list) and isinstance(shifts, list) else False
        if not (ints and len(dims) == len(shifts) and all(0 <= d < src.rank for d in dims)
                and len(set(dims)) == len(dims)):
            v.error(f"solar.roll dims {format_attr_value(dims)} must be distinct dimensions below {src.rank}, "
                    f"one integer shift each (shifts {format_attr_value(shifts)})", self.loc)
            return None
        return src

    def index_map(self, values: Mapping[str, int]) -> IndexMap:
        return Roll(tuple(self.attrs["dims"]), tuple(self.attrs["shifts"]))


class GatherOp(GenericOp):
    opname = "solar.gather"
    moves_data = True
    operand_count = 2
    index_operand = 1
    required = ("axis",)
    __slots__ = ()

    def infer(self, v: Verifier, args: list[TensorType], declared: TensorType | None) -> TensorType | None:
        src, idx = args
        if not idx.dtype.is_int:
            v.error(f"solar.gather indices must be integers, not {idx.dtype}", self.use_loc(self.args[1]))
            return None
        axis = self.axis(v, src.rank)
        if axis is None:
            return None
        return TensorType(src.shape[:axis] + idx.shape + src.shape[axis + 1:], src.dtype)


class ScatterOp(GenericOp):
    opname = "solar.scatter"
    moves_data = True
    operand_count = 3
    index_operand = 1
    required = ("axis",)
    # in_place = true: the destination is updated where the source lands, never copied (a static KV cache)
    optional = ("reduce", "in_place")
    __slots__ = ()

    def infer(self, v: Verifier, args: list[TensorType], declared: TensorType | None) -> TensorType | None:
        dest, idx, src = args
        reduce = self.attrs.get("reduce", Word("none"))
        name = reduce.name if isinstance(reduce, Word) else reduce
        if name not in SCATTER_REDUCTIONS:
            v.error(f"solar.scatter reduce must be one of {', '.join(SCATTER_REDUCTIONS)}, not "
                    f"{format_attr_value(reduce)}", self.loc)
        if not idx.dtype.is_int:
            v.error(f"solar.scatter indices must be integers, not {idx.dtype}", self.use_loc(self.args[1]))
            return None
        axis = self.axis(v, dest.rank)
        if axis is None:
            return None
        expected_src = TensorType(dest.shape[:axis] + idx.shape + dest.shape[axis + 1:], dest.dtype)
        if not types_equal(expected_src, src):
            v.error(f"solar.scatter source %{self.args[2].name} has type {src} but must be {expected_src}",
                    self.use_loc(self.args[2]))
        return dest
