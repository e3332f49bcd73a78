"""Data-dependent composition ops: sorting, selection, cumulative extremes, and results whose size depends
on the data (nonzero, masked select). None of them is a loop nest with affine accesses: which element goes
where depends on the values. Each is its own unit of execution (docs/counts.md, "Data-dependent ops").

    %v, %i = solar.sort %x {axis = 1, descending = false} : (tensor<4x16xf32>, tensor<4x16xi64>)
    %i = solar.argsort %x {axis = 1, descending = true} : tensor<4x16xi64>
    %v, %i = solar.topk %x {k = 2, axis = 1, largest = true} : (tensor<4x2xf32>, tensor<4x2xi64>)
    %v, %i = solar.kthvalue %x {k = 8, axis = 1} : (tensor<4xf32>, tensor<4xi64>)
    %v, %i = solar.cummax %x {axis = 1} : (tensor<4x16xf32>, tensor<4x16xi64>)
    %idx, %n = solar.nonzero %x : (tensor<64x2xi64>, tensor<i64>)
    %sel, %n = solar.masked_select %x, %m : (tensor<64xf32>, tensor<i64>)

A result whose size depends on the data has a static bound as its size (the most it can hold: the element
count, or a size the program gives) and a second result, the true count, known only at run time. Rows past
the count hold `fill` when `pad = true` (JAX's `nonzero(size=...)` writes them), else they are not part of
the framework's result (PyTorch's) and hold 0 here.

Semantics: docs/ir.md, "Data-dependent operations". Each class states its operands and attributes, and
its result types (`expected_types`: several, unlike the other ops of the generic syntax), which `verify`
checks; their backend hooks (running them, their lower-bound counts) are in backends/selection.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from ..diagnostics import Location
from ..dtypes import DType
from ..expr import Expr
from ..types import Dim, TensorType, dims_equal, types_equal
from .shape import GenericOp

if TYPE_CHECKING:
    from ..verifier import Verifier

ErrorSink = Callable[[str, Location], None]


class SelectionOp(GenericOp):
    """An op whose result depends on comparing its input's values: sort, argsort, topk, kthvalue, cummax,
    cummin, nonzero, masked_select."""

    __slots__ = ()
    backend_hooks = "solar.backends.selection:HOOKS"
    moves_data = True  # its own unit of execution: it reads its input and writes its results
    operand_count: ClassVar[int] = 1
    required: ClassVar[tuple[str, ...]] = ("axis",)
    optional: ClassVar[tuple[str, ...]] = ()
    # The result types, in order: "values" (the input's element type), "indices" (an integer type), "count".
    results_kinds: ClassVar[tuple[str, ...]] = ("values", "indices")

    def expected_types(self, args: list[TensorType], error: ErrorSink) -> list[TensorType] | None:
        """The result types the operands and attributes imply (only the shapes of integer results: their
        dtype is the declared one), or None after reporting why there are none."""
        raise NotImplementedError

    def infer_result_types(self, v: Verifier) -> list[TensorType] | None:
        if not self._signature(v) or any(a.type is None for a in self.args):
            return None
        return self.expected_types([a.type for a in self.args if a.type is not None], v.error)

    def verify(self, v: Verifier, for_vars: set[str]) -> None:
        signature = self._signature(v)
        if not signature or any(a.type is None for a in self.args):
            return
        expected = self.expected_types([a.type for a in self.args if a.type is not None], v.error)
        if expected is None:
            return
        if len(self.result_types) != len(expected):
            v.error(f"{self.opname} has {len(expected)} result(s) here, not {len(self.result_types)}", self.loc)
            return
        for want, declared in zip(expected, self.result_types, strict=True):
            if not types_equal(want, declared):
                v.expect_type(self, want, declared)
                return  # the first mismatch says it; the others usually follow from it

    # -- shared checks ------------------------------------------------------------------------------
    def axis_of(self, rank: int, error: ErrorSink) -> int | None:
        axis = self.attrs.get("axis")
        if not isinstance(axis, int) or isinstance(axis, bool) or not 0 <= axis < rank:
            error(f"{self.opname} axis must be an integer in [0, {rank}), not {axis!r}", self.loc)
            return None
        return axis

    def flag(self, name: str, default: bool, error: ErrorSink) -> bool:
        value = self.attrs.get(name, default)
        if not isinstance(value, bool):
            error(f"{self.opname} {name} must be true or false, not {value!r}", self.loc)
            return default
        return value

    def k(self, n: Dim, error: ErrorSink) -> int | None:
        k = self.attrs.get("k")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1 or (isinstance(n, int) and k > n):
            extent = f" (the axis has {n})" if isinstance(n, int) else ""
            error(f"{self.opname} k must be an integer in [1, n]{extent}, not {k!r}", self.loc)
            return None
        return k

    def index_dtype(self, k: int, error: ErrorSink) -> DType:
        declared = self.result_types[k].dtype if k < len(self.result_types) else DType.I64
        if not declared.is_int:
            error(f"{self.opname} result {k} holds indices: an integer type, not {declared.spelling}", self.loc)
        return declared  # reported once: the result's type is not also a mismatch


class SortOp(SelectionOp):
    """Values and indices of `%x` sorted along `axis` (ascending, or `descending`); stable: equal elements
    keep their order; NaN is larger than every number."""

    opname = "solar.sort"
    __slots__ = ()
    optional = ("descending",)

    def expected_types(self, args: list[TensorType], error: ErrorSink) -> list[TensorType] | None:
        x = args[0]
        if self.axis_of(x.rank, error) is None:
            return None
        self.flag("descending", False, error)
        return [x, x.with_dtype(self.index_dtype(1, error))]


class ArgsortOp(SortOp):
    """The indices of `solar.sort` alone."""

    opname = "solar.argsort"
    __slots__ = ()
    results_kinds = ("indices",)

    def expected_types(self, args: list[TensorType], error: ErrorSink) -> list[TensorType] | None:
        x = args[0]
        if self.axis_of(x.rank, error) is None:
            return None
        self.flag("descending", False, error)
        return [x.with_dtype(self.index_dtype(0, error))]


class TopkOp(SelectionOp):
    """The `k` largest (`largest = false`: smallest) elements along `axis` and their indices, in descending
    (ascending) order; among equal elements the lower index first. `sorted = false`: the k in an order the
    program does not depend on (torch's `sorted=False`, a router's top-k that its sum makes order-free); a
    run may give them in any order, so only choosing them is priced."""

    opname = "solar.topk"
    __slots__ = ()
    required = ("k", "axis")
    optional = ("largest", "sorted")

    def expected_types(self, args: list[TensorType], error: ErrorSink) -> list[TensorType] | None:
        x = args[0]
        axis = self.axis_of(x.rank, error)
        k = self.k(x.shape[axis], error) if axis is not None else None
        if axis is None or k is None:
            return None
        self.flag("largest", True, error)
        self.flag("sorted", True, error)
        shape = (*x.shape[:axis], k, *x.shape[axis + 1:])
        return [TensorType(shape, x.dtype), TensorType(shape, self.index_dtype(1, error))]


class KthvalueOp(SelectionOp):
    """The `k`-th smallest element along `axis` (k from 1) and an index where it stands; `axis` is dropped.
    PyTorch's median is the ⌈n/2⌉-th."""

    opname = "solar.kthvalue"
    __slots__ = ()
    required = ("k", "axis")

    def expected_types(self, args: list[TensorType], error: ErrorSink) -> list[TensorType] | None:
        x = args[0]
        axis = self.axis_of(x.rank, error)
        if axis is None or self.k(x.shape[axis], error) is None:
            return None
        shape = (*x.shape[:axis], *x.shape[axis + 1:])
        return [TensorType(shape, x.dtype), TensorType(shape, self.index_dtype(1, error))]


class CummaxOp(SelectionOp):
    """The running maximum along `axis` (from the end when `reverse`) and the index where it was last
    reached (a later equal element takes over); the index result may be left out."""

    opname = "solar.cummax"
    __slots__ = ()
    optional = ("reverse",)

    def expected_types(self, args: list[TensorType], error: ErrorSink) -> list[TensorType] | None:
        x = args[0]
        if self.axis_of(x.rank, error) is None:
            return None
        self.flag("reverse", False, error)
        out = [x]
        if len(self.result_types) > 1:
            out.append(x.with_dtype(self.index_dtype(1, error)))
        return out


class CumminOp(CummaxOp):
    """The running minimum, as `solar.cummax`."""

    opname = "solar.cummin"
    __slots__ = ()


class NonzeroOp(SelectionOp):
    """The coordinates of the elements of `%x` that are not zero (not false), in row-major order: a
    `tensor<N x R x int>` for rank R, N a static bound (at most the element count), and the true count."""

    opname = "solar.nonzero"
    __slots__ = ()
    required = ()
    optional = ("pad", "fill")
    results_kinds = ("indices", "count")

    def expected_types(self, args: list[TensorType], error: ErrorSink) -> list[TensorType] | None:
        x = args[0]
        if x.rank == 0:
            error("solar.nonzero needs a tensor of rank 1 or more", self.loc)
            return None
        self.flag("pad", False, error)
        _fill(self, error, integer=True)
        if len(self.result_types) != 2 or self.result_types[0].rank != 2:
            error("solar.nonzero has two results: the coordinates (N x rank) and the count", self.loc)
            return None
        bound = self.result_types[0].shape[0]
        if not self.attrs.get("pad", False):  # padded (JAX's size=), the result may have more rows than elements
            _check_bound(self, bound, _count(x.shape), error)
        return [TensorType((bound, x.rank), self.index_dtype(0, error)), TensorType((), DType.I64)]


class MaskedSelectOp(SelectionOp):
    """The rows of `%x` where `%mask` holds: the mask covers the leading dims of `%x` (all of them for
    `torch.masked_select`); result `tensor<N x rest...>` (N a static bound, at most the mask's element
    count), in row-major order, and the true count."""

    opname = "solar.masked_select"
    __slots__ = ()
    operand_count = 2
    required = ()
    optional = ("pad", "fill")
    results_kinds = ("values", "count")

    def expected_types(self, args: list[TensorType], error: ErrorSink) -> list[TensorType] | None:
        x, mask = args
        if mask.dtype is not DType.I1 or not 1 <= mask.rank <= x.rank or any(
                not dims_equal(a, b) for a, b in zip(mask.shape, x.shape[:mask.rank], strict=False)):
            error(f"solar.masked_select mask {mask} must be i1 and cover the leading dims of {x}", self.loc)
            return None
        self.flag("pad", False, error)
        _fill(self, error, integer=not x.dtype.is_float)
        if len(self.result_types) != 2 or self.result_types[0].rank != x.rank - mask.rank + 1:
            error("solar.masked_select has two results: the selected rows and the count", self.loc)
            return None
        bound = self.result_types[0].shape[0]
        _check_bound(self, bound, _count(mask.shape), error)
        return [TensorType((bound, *x.shape[mask.rank:]), x.dtype), TensorType((), DType.I64)]


def _fill(op: SelectionOp, error: ErrorSink, integer: bool) -> None:
    fill = op.attrs.get("fill", 0)
    ok = isinstance(fill, int) and not isinstance(fill, bool) if integer else \
        isinstance(fill, int | float) and not isinstance(fill, bool)
    if not ok:
        error(f"{op.opname} fill must be {'an integer' if integer else 'a number'}, not {fill!r}", op.loc)


def _count(shape: tuple[Dim, ...]) -> int | None:
    total = 1
    for d in shape:
        if not isinstance(d, int):
            return None
        total *= d
    return total


def _check_bound(op: SelectionOp, bound: Dim | Expr, most: int | None, error: ErrorSink) -> None:
    if isinstance(bound, int) and most is not None and bound > most:
        error(f"{op.opname} bound {bound} exceeds the {most} elements the result can hold", op.loc)


SELECTION_OPS: tuple[type[SelectionOp], ...] = (SortOp, ArgsortOp, TopkOp, KthvalueOp, CummaxOp, CumminOp,
                                                NonzeroOp, MaskedSelectOp)
