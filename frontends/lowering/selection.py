"""Sorting and selection: sort, argsort, topk, kthvalue, median, cummax/cummin, nonzero, masked_select and
boolean-mask indexing, each lowered to one data-dependent op of solar.ir.ops (its own unit of
execution, priced by the lower bounds of docs/counts.md, "Data-dependent ops"), never to a loop nest that
would state one algorithm's work.

A result whose size depends on the data (nonzero, masked_select, `x[mask]`) is held padded to a static
bound (the element count), its true count beside it (`Emitter.bounded`); it may be returned, not computed
on: work on the padding would be priced at the bound, above the true count.
"""

from __future__ import annotations

from solar.ir.dtypes import DType
from solar.ir.expr import IntLit
from solar.ir.ops import (
    ArgsortOp,
    CummaxOp,
    CumminOp,
    KthvalueOp,
    MaskedSelectOp,
    NonzeroOp,
    SliceEntry,
    SortOp,
    TopkOp,
    Value,
)
from solar.ir.types import TensorType

from .core import Emitter, broadcast_shapes, norm_dim, prod_dims, ttype, vtype
from .registry import JaxNode, TorchNode, jax_prim, torch_op


def _static_axis(t: TensorType, dim: int, what: str) -> tuple[int, int]:
    axis = norm_dim(dim, t.rank) if t.rank else 0
    n = t.shape[axis] if t.rank else 1
    if not isinstance(n, int):
        raise ValueError(f"{what} along a symbolic dimension ({n})")  # naming it lets export fix it
    return axis, n


def sort(em: Emitter, x: Value, dim: int, descending: bool, index_dtype: DType = DType.I64,
         values: bool = True) -> list[Value]:
    t = vtype(x)
    axis, _ = _static_axis(t, dim, "sorting")
    attrs = {"axis": axis, "descending": descending}
    if not values:
        return em.data_op(ArgsortOp, [x], [t.with_dtype(index_dtype)], attrs, "argsort")
    return em.data_op(SortOp, [x], [t, t.with_dtype(index_dtype)], attrs, "sort")


def topk(em: Emitter, x: Value, k: int, dim: int, largest: bool, index_dtype: DType = DType.I64) -> list[Value]:
    """Values and indices of the k largest (smallest) elements along `dim`, in descending (ascending)
    order; among equal elements the lower index first."""
    t = vtype(x)
    axis, n = _static_axis(t, dim, "top-k")
    if not 1 <= k <= n:
        raise ValueError(f"top-k with k = {k} of {n} elements")
    shape = (*t.shape[:axis], k, *t.shape[axis + 1:])
    return em.data_op(TopkOp, [x], [ttype(shape, t.dtype), ttype(shape, index_dtype)],
                      {"k": k, "axis": axis, "largest": largest}, "topk")


def kthvalue(em: Emitter, x: Value, k: int, dim: int, keepdim: bool) -> list[Value]:
    t = vtype(x)
    axis, n = _static_axis(t, dim, "kthvalue")
    if not 1 <= k <= n:
        raise ValueError(f"kthvalue with k = {k} of {n} elements")
    if t.rank == 0:
        return [x, em.constant(0, (), DType.I64)]
    shape = (*t.shape[:axis], *t.shape[axis + 1:])
    outs = em.data_op(KthvalueOp, [x], [ttype(shape, t.dtype), ttype(shape, DType.I64)], {"k": k, "axis": axis},
                      "kthvalue")
    if keepdim:
        kept = (*t.shape[:axis], 1, *t.shape[axis + 1:])
        outs = [em.reshape(v, kept) for v in outs]
    return outs


def cumulative(em: Emitter, x: Value, dim: int, largest: bool, indices: bool, reverse: bool = False
               ) -> list[Value]:
    t = vtype(x)
    axis, _ = _static_axis(t, dim, "a cumulative extreme")
    types = [t, t.with_dtype(DType.I64)] if indices else [t]
    attrs: dict[str, object] = {"axis": axis}
    if reverse:
        attrs["reverse"] = True
    return em.data_op(CummaxOp if largest else CumminOp, [x], types, attrs, "cummax" if largest else "cummin")


def nonzero(em: Emitter, x: Value, index_dtype: DType = DType.I64, size: int | None = None,
            fill: int = 0) -> list[Value]:
    """Coordinates of the nonzero elements, padded to `size` rows (a static bound: the element count when
    None), and the count."""
    t = vtype(x)
    bound = size if size is not None else _elements(t)
    attrs = {"pad": True, "fill": fill} if size is not None else {}
    coords, count = em.data_op(NonzeroOp, [x], [ttype((bound, t.rank), index_dtype), ttype((), DType.I64)], attrs,
                               "nonzero")
    if size is None:
        em.bounded[coords] = count
    return [coords, count]


def nonzero_columns(em: Emitter, x: Value) -> list[Value]:
    """`torch.where(condition)`: nonzero's coordinates as one tensor per dim, each of the data-dependent size
    (the same count)."""
    coords, count = nonzero(em, x)
    t = vtype(coords)
    whole = SliceEntry(start=IntLit(0), stop=IntLit(t.shape[0]))
    columns = [em.slice(coords, [whole, SliceEntry(index=IntLit(d))], (t.shape[0],)) for d in range(t.shape[1])]
    for col in columns:
        em.bounded[col] = count
    return columns


def masked_rows(em: Emitter, x: Value, mask: Value) -> Value:
    """`x[mask]` with the mask over the leading dims of `x`: the selected rows (padded to the mask's element
    count) in row-major order."""
    t, m = vtype(x), vtype(mask)
    bound = _elements(m)
    rows, count = em.data_op(MaskedSelectOp, [x, mask], [ttype((bound, *t.shape[m.rank:]), t.dtype),
                                                          ttype((), DType.I64)], {}, "masked_select")
    em.bounded[rows] = count
    return rows


def _elements(t: TensorType) -> int:
    n = prod_dims(t.shape)
    if not isinstance(n, int):
        raise ValueError(f"a data-dependent size bounded by a symbolic element count ({n})")
    return n


# ---- PyTorch ---------------------------------------------------------------------------------------


@torch_op("sort")
def lower_sort(n: TorchNode) -> list[Value]:
    try:
        return sort(n.em, n.tensor("self"), n.get("dim", -1), bool(n.get("descending", False)))
    except ValueError as err:
        raise n.unsupported(str(err)) from None


@torch_op("argsort")
def lower_argsort(n: TorchNode) -> Value:
    try:
        return sort(n.em, n.tensor("self"), n.get("dim", -1), bool(n.get("descending", False)), values=False)[0]
    except ValueError as err:
        raise n.unsupported(str(err)) from None


@torch_op("topk")
def lower_topk(n: TorchNode) -> list[Value]:
    try:
        out = topk(n.em, n.tensor("self"), int(n["k"]), n.get("dim", -1), bool(n.get("largest", True)))
        if not n.get("sorted", True) and out[0].owner is not None:
            # Any order is torch's: the sorted one is one of them (what the executor gives), and only the
            # choice is priced (solar_ir/analysis/selection_counts.py).
            out[0].owner.attrs["sorted"] = False
        return out
    except ValueError as err:
        raise n.unsupported(str(err)) from None


@torch_op("kthvalue")
def lower_kthvalue(n: TorchNode) -> list[Value]:
    try:
        return kthvalue(n.em, n.tensor("self"), int(n["k"]), n.get("dim", -1), bool(n.get("keepdim", False)))
    except ValueError as err:
        raise n.unsupported(str(err)) from None


@torch_op("median")
def lower_median(n: TorchNode) -> Value | list[Value]:
    """PyTorch's median is the lower one: the ⌈n/2⌉-th smallest; without `dim`, of all elements."""
    x = n.tensor("self")
    t = vtype(x)
    try:
        if n.overload == "default":
            flat = n.em.reshape(x, (prod_dims(t.shape),)) if t.rank != 1 else x
            count = _elements(t)
            return kthvalue(n.em, flat, (count + 1) // 2, 0, False)[0]
        dim = n["dim"]
        axis, size = _static_axis(t, dim, "median")
        return kthvalue(n.em, x, (size + 1) // 2, axis, bool(n.get("keepdim", False)))
    except ValueError as err:
        raise n.unsupported(str(err)) from None


@torch_op("cummax", "cummin")
def lower_cummax(n: TorchNode) -> list[Value]:
    try:
        return cumulative(n.em, n.tensor("self"), n["dim"], n.op == "aten::cummax", True)
    except ValueError as err:
        raise n.unsupported(str(err)) from None


@torch_op("nonzero")
def lower_nonzero(n: TorchNode) -> Value:
    try:
        return nonzero(n.em, n.tensor("self"))[0]
    except ValueError as err:
        raise n.unsupported(str(err)) from None


@torch_op("masked_select")
def lower_masked_select(n: TorchNode) -> Value:
    x, mask = n.tensor("self"), n.tensor("mask")
    shape = broadcast_shapes(vtype(x).shape, vtype(mask).shape)
    try:
        return masked_rows(n.em, n.em.broadcast_to(x, shape), n.em.broadcast_to(mask, shape))
    except ValueError as err:
        raise n.unsupported(str(err)) from None


def boolean_mask_index(n: TorchNode, x: Value, mask: Value) -> Value:
    """`x[mask]` (aten.index with one boolean index over the leading dims)."""
    m = vtype(mask)
    if m.rank > vtype(x).rank or any(str(a) != str(b) for a, b in zip(m.shape, vtype(x).shape, strict=False)):
        raise n.unsupported(f"a boolean mask of shape {m} that does not cover the leading dims of {vtype(x)}")
    try:
        return masked_rows(n.em, x, mask)
    except ValueError as err:
        raise n.unsupported(str(err)) from None


# ---- JAX -------------------------------------------------------------------------------------------


@jax_prim("top_k")
def lower_jax_top_k(n: JaxNode) -> list[Value]:
    x = n.tensor(0)
    dim = int(n.params["axis"]) if "axis" in n.params else -1
    try:
        return topk(n.em, x, int(n.params["k"]), dim, True, n.outs[1].dtype)
    except ValueError as err:
        raise n.unsupported(str(err)) from None


@jax_prim("cummax", "cummin")
def lower_jax_cummax(n: JaxNode) -> Value:
    try:
        return cumulative(n.em, n.tensor(0), int(n.params["axis"]), n.prim == "cummax", False,
                          bool(n.params.get("reverse", False)))[0]
    except ValueError as err:
        raise n.unsupported(str(err)) from None


@jax_prim("solar_nonzero")
def lower_jax_nonzero(n: JaxNode) -> list[Value]:
    """`jnp.nonzero(x, size=K, fill_value=f)` (frontends/jax_intercept.py): K rows, those past the count
    filled with f; one coordinate array per dim."""
    x = n.tensor(0)
    size = int(n.params["size"])
    em = n.em
    coords, _ = nonzero(em, x, n.outs[0].dtype, size, int(n.params["fill"]))
    whole = SliceEntry(start=IntLit(0), stop=IntLit(size))
    return [em.slice(coords, [whole, SliceEntry(index=IntLit(d))], (size,)) for d in range(vtype(x).rank)]
