"""Shape inference of the composition ops: the result type of a slice, insert, reshape, permute, concat,
broadcast, gather or scatter from its operands and attributes, checked against the type the op declares."""

from __future__ import annotations

from itertools import pairwise
from typing import ClassVar

from .diagnostics import Location
from .expr import (
    Binary,
    Expr,
    IntLit,
    constant_value,
    format_expr,
)
from .ops import (
    SCATTER_REDUCTIONS,
    BroadcastOp,
    ConcatOp,
    GatherOp,
    GenericOp,
    InsertOp,
    Op,
    PermuteOp,
    ReshapeOp,
    ScatterOp,
    SliceEntry,
    SliceOp,
    Word,
)
from .ops_select import SelectionOp
from .printer import format_attr_value
from .types import Dim, TensorType, canonical_dim, dims_equal, format_dim, types_equal
from .verify_base import Checker, as_expr, dim_value, expr_value, suggest


class ShapeInference(Checker):
    """The verifier's checks of the shape ops (mixed into `Verifier`)."""

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
        size = dim_value(dim, self.defaults)
        if size is None:
            return True
        if entry.index is not None:
            index = expr_value(entry.index, self.defaults)
            if index is not None and not 0 <= index < size:
                self.error(f"{what} index {format_expr(entry.index)} is outside a dimension of size {size}",
                           entry.loc)
                return False
            return True
        lo, hi = expr_value(start, self.defaults), expr_value(stop, self.defaults)
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
        if isinstance(op, SelectionOp):
            self.selection(op)
            return
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

    def selection(self, op: SelectionOp) -> None:
        """The data-dependent ops state their own operands, attributes and result types (ops_select.py)."""
        if len(op.args) != op.operand_count:
            self.error(f"{op.opname} takes {op.operand_count} operand(s), not {len(op.args)}", op.loc)
            return
        known = op.required + op.optional
        ok = True
        for key in op.attrs:
            if key not in known:
                self.error(f"{op.opname} has no attribute '{key}'{suggest(key, known)}", op.loc)
                ok = False
        for key in op.required:
            if key not in op.attrs:
                self.error(f"{op.opname} needs the attribute '{key}'", op.loc)
                ok = False
        if not ok or any(a.type is None for a in op.args):
            return
        expected = op.expected_types([a.type for a in op.args if a.type is not None], self.error)
        if expected is None:
            return
        if len(op.result_types) != len(expected):
            self.error(f"{op.opname} has {len(expected)} result(s) here, not {len(op.result_types)}", op.loc)
            return
        for want, declared in zip(expected, op.result_types, strict=True):
            if not types_equal(want, declared):
                self.expect_type(op, want, declared)
                return  # the first mismatch says it; the others usually follow from it

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
            total = dim if total is None else Binary("+", as_expr(total), as_expr(dim))
        assert total is not None
        shape = list(first.shape)
        shape[axis] = canonical_dim(as_expr(total))
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
