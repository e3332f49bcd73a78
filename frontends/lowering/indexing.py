"""Indirect access: embedding, index_select, advanced indexing, gather, scatter, index_put, index_copy,
one_hot.

SIR kernels index affinely only; data-dependent reads are `solar.gather` / `solar.scatter` (numpy `take`
along one axis). torch.gather's elementwise form becomes an index kernel computing flat positions
(`I[p]·stride_d + Σ p_k·stride_k`) and a `take` from the flattened tensor.
"""

from __future__ import annotations

from collections.abc import Sequence

from solar.ir.dtypes import DType
from solar.ir.expr import Binary, Expr, IntLit
from solar.ir.ops import ConstantOp, SliceEntry, Value
from solar.ir.types import Dim

from .core import (
    Emitter,
    access,
    broadcast_shapes,
    cast,
    dexpr,
    lit,
    loops,
    norm_dim,
    prod_dims,
    select,
    ttype,
    vtype,
)
from .registry import TorchNode, torch_op
from .selection import boolean_mask_index

SCATTER_REDUCE = {"sum": "add", "add": "add", "prod": "mul", "multiply": "mul", "amax": "max", "amin": "min"}


def strides(shape: Sequence[Dim]) -> list[Expr]:
    out: list[Expr] = []
    acc: Dim = 1
    for d in reversed(shape):
        out.append(dexpr(acc))
        acc = prod_dims([acc, d])
    return list(reversed(out))


def _times(e: Expr, s: Expr) -> Expr:
    if isinstance(s, IntLit) and s.value == 1:
        return e
    return Binary("*", e, s)


def flat_index(em: Emitter, x_shape: Sequence[Dim], idx: Value, dim: int, hint: str = "flat_idx") -> Value:
    """For torch.gather/scatter along `dim`: the flat position in x of every index element."""
    it = vtype(idx)
    st = strides(x_shape)
    kb = em.kernel([(idx, "I")], [("F", ttype(it.shape, DType.I64))], hint=hint)
    with loops(kb, it.shape) as p:
        total: Expr = _times(cast(access("I", p), it.dtype, DType.I64), st[dim])
        for k, (pk, s) in enumerate(zip(p, st, strict=True)):
            if k != dim:
                total = Binary("+", total, _times(pk, s))
        kb.assign(access("F", p), total)
    return kb.results[0]


@torch_op("gather", "take_along_dim")
def lower_gather(n: TorchNode) -> Value:
    x = n.tensor("self")
    idx = n.tensor("index") if "index" in n.args else n.tensor("indices")
    xt, it = vtype(x), vtype(idx)
    dim = n.args.get("dim")
    em = n.em
    if dim is None:  # take_along_dim without dim: over the flattened tensor
        flat = em.reshape(x, (prod_dims(xt.shape),))
        return em.gather(flat, em.reshape(idx, (prod_dims(it.shape),)), 0)
    dim = norm_dim(dim, xt.rank)
    if it.rank != xt.rank:
        raise n.unsupported("index and input of different ranks")
    f = flat_index(em, xt.shape, idx, dim)
    flat = em.reshape(x, (prod_dims(xt.shape),))
    return em.gather(flat, f, 0)


@torch_op("index_select")
def lower_index_select(n: TorchNode) -> Value:
    x = n.tensor("self")
    return n.em.gather(x, n.tensor("index"), norm_dim(n["dim"], vtype(x).rank))


@torch_op("embedding")
def lower_embedding(n: TorchNode) -> Value:
    return n.em.gather(n.tensor("weight"), n.tensor("indices"), 0)


def _index_tensors(n: TorchNode, x: Value) -> tuple[int, list[Value]]:
    """The first indexed dim and the index tensors of advanced indexing (adjacent, integer)."""
    indices = list(n["indices"])
    pos = [k for k, v in enumerate(indices) if v is not None]
    if not pos:
        raise n.unsupported("indexing without an index tensor")
    if pos != list(range(pos[0], pos[0] + len(pos))):
        raise n.unsupported("advanced indexing with non-adjacent index tensors")
    tensors = [indices[k] for k in pos]
    for t in tensors:
        if not isinstance(t, Value):
            raise n.unsupported("an index that is not a tensor")
        if vtype(t).dtype.is_bool:
            raise n.unsupported("boolean mask indexing beside other indices")
    return pos[0], tensors


def _combined_index(em: Emitter, x: Value, first: int, tensors: list[Value]) -> tuple[Value, Value]:
    """Several index tensors over adjacent dims: merge those dims and compute one flat index."""
    xt = vtype(x)
    k = len(tensors)
    dims = list(xt.shape[first: first + k])
    merged = em.reshape(x, (*xt.shape[:first], prod_dims(dims), *xt.shape[first + k:]))
    shape = broadcast_shapes(*[vtype(t).shape for t in tensors])
    st = strides(dims)
    names = [f"I{j}" for j in range(k)]
    kb = em.kernel(list(zip(tensors, names, strict=True)), [("F", ttype(shape, DType.I64))], hint="flat_idx")
    with loops(kb, shape) as p:
        total: Expr | None = None
        for t, name, s, size in zip(tensors, names, st, dims, strict=True):
            tt = vtype(t)
            off = len(shape) - tt.rank
            ix = [IntLit(0) if (isinstance(d, int) and d == 1 and not (isinstance(shape[j + off], int)
                                                                        and shape[j + off] == 1)) else p[j + off]
                  for j, d in enumerate(tt.shape)]
            v = cast(access(name, ix), tt.dtype, DType.I64)
            # Negative indices count from the end, as in Python.
            v = select(Binary("<", v, lit(0, DType.I64)), v + dexpr(size), v)
            term = _times(v, s)
            total = term if total is None else Binary("+", total, term)
        assert total is not None
        kb.assign(access("F", p), total)
    return merged, kb.results[0]


@torch_op("index", "_unsafe_index")
def lower_index(n: TorchNode) -> Value:
    x = n.tensor("self")
    indices = list(n["indices"])
    if len(indices) == 1 and isinstance(indices[0], Value) and vtype(indices[0]).dtype.is_bool:
        return boolean_mask_index(n, x, indices[0])  # x[mask]: a data-dependent size
    first, tensors = _index_tensors(n, x)
    em = n.em
    if len(tensors) == 1:
        return em.gather(x, _from_the_start(em, tensors[0], vtype(x).shape[first]), first)
    merged, f = _combined_index(em, x, first, tensors)
    return em.gather(merged, f, first)


def _from_the_start(em: Emitter, idx: Value, size: Dim) -> Value:
    """A constant index with negative entries (Falcon's `qkv[..., [-2], :]`: the keys after the queries),
    counted from the end as Python does, folded into the constant; any other index is as given."""
    owner = idx.owner
    if not isinstance(owner, ConstantOp) or not isinstance(size, int):
        return idx

    def wrap(value: object) -> object:
        if isinstance(value, list):
            return [wrap(v) for v in value]
        return value + size if isinstance(value, int) and value < 0 else value

    value = wrap(owner.value)
    if value == owner.value:
        return idx
    t = vtype(idx)
    return em.constant(value if isinstance(value, list) else int(value), t.shape, t.dtype)  # type: ignore[arg-type]


@torch_op("index_put", "_unsafe_index_put")
def lower_index_put(n: TorchNode) -> Value:
    x, values = n.tensor("self"), n.args["values"]
    first, tensors = _index_tensors(n, x)
    em = n.em
    reduce = "add" if n.get("accumulate", False) else "none"
    xt = vtype(x)
    if len(tensors) == 1:
        target, idx, axis = x, _from_the_start(em, tensors[0], xt.shape[first]), first
    else:
        target, idx = _combined_index(em, x, first, tensors)
        axis = first
    tt = vtype(target)
    src_shape = (*tt.shape[:axis], *vtype(idx).shape, *tt.shape[axis + 1:])
    if not isinstance(values, Value):
        values = em.constant(values, src_shape, xt.dtype)
    values = em.broadcast_to(values, src_shape)
    out = em.scatter(target, idx, values, axis, reduce)
    return em.reshape(out, xt.shape)


@torch_op("index_copy", "index_copy_")
def lower_index_copy(n: TorchNode) -> Value:
    """`x.index_copy_(dim, index, source)`: the slices of `source` stored at positions `index` along `dim`
    (a static KV cache's update at the cache positions). One `solar.scatter` along `dim`, whose source has
    the destination's shape with `dim` resized to the index's length, as torch requires."""
    x, idx, src = n.tensor("self"), n.tensor("index"), n.tensor("source")
    xt, it = vtype(x), vtype(idx)
    if it.rank > 1:
        raise n.unsupported("index_copy with an index of rank > 1")
    if it.rank == 0:
        idx = n.em.reshape(idx, (1,))
    dim = norm_dim(n["dim"], xt.rank)
    if vtype(src).rank != xt.rank:  # torch also takes a source of one dim less where the index is a scalar
        src = n.em.reshape(src, (*xt.shape[:dim], 1, *xt.shape[dim + 1:]))
    return n.em.scatter(x, idx, src, dim, "none")


def _scatter(n: TorchNode, reduce: str) -> Value:
    x = n.tensor("self")
    idx = n.tensor("index")
    xt, it = vtype(x), vtype(idx)
    dim = norm_dim(n["dim"], xt.rank)
    em = n.em
    src = n.args.get("src", n.args.get("value"))
    if isinstance(src, Value):
        st = vtype(src)
        if not all(isinstance(a, int) and isinstance(b, int) and a == b
                   for a, b in zip(st.shape, it.shape, strict=False)):
            # torch reads src only where index has elements: slice src down to index's shape.
            entries = [SliceEntry(start=IntLit(0), stop=dexpr(d)) for d in it.shape]
            src = em.slice(src, entries, it.shape)
    else:
        src = em.constant(src, it.shape, xt.dtype)
    f = flat_index(em, xt.shape, idx, dim)
    numel = prod_dims(it.shape)
    total = prod_dims(xt.shape)
    out = em.scatter(em.reshape(x, (total,)), em.reshape(f, (numel,)), em.reshape(src, (numel,)), 0, reduce)
    return em.reshape(out, xt.shape)


@torch_op("scatter")
def lower_scatter(n: TorchNode) -> Value:
    r = n.args.get("reduce")
    if r is None:
        return _scatter(n, "none")
    if r not in ("add", "multiply"):
        raise n.unsupported(f"scatter reduce '{r}'")
    return _scatter(n, SCATTER_REDUCE[r])


@torch_op("scatter_add")
def lower_scatter_add(n: TorchNode) -> Value:
    return _scatter(n, "add")


@torch_op("scatter_reduce")
def lower_scatter_reduce(n: TorchNode) -> Value:
    r = n["reduce"]
    if r not in SCATTER_REDUCE:
        raise n.unsupported(f"scatter_reduce '{r}'")
    if not n.get("include_self", True):
        raise n.unsupported("scatter_reduce with include_self=False")
    return _scatter(n, SCATTER_REDUCE[r])


@torch_op("one_hot")
def lower_one_hot(n: TorchNode) -> Value:
    x = n.tensor("self")
    xt = vtype(x)
    out = n.out.shape
    kb = n.em.kernel([(x, "X")], [("Y", ttype(out, n.out.dtype))])
    with loops(kb, out) as idx:
        hit = Binary("==", cast(access("X", idx[:-1]), xt.dtype, DType.I64), idx[-1])
        kb.assign(access("Y", idx), select(hit, lit(1, n.out.dtype), lit(0, n.out.dtype)))
    return kb.results[0]


@torch_op("repeat_interleave")
def lower_repeat_interleave(n: TorchNode) -> Value:
    """`x.repeat_interleave(r, dim)` with a constant count r (`self_int`): each element r times in a row,
    a view (reshape to (..., d, 1, ...), broadcast to (..., d, r, ...), reshape to d·r); without `dim`, of
    the flattened tensor. Counts given as a tensor (`self_Tensor`, data) are left to decomposition."""
    repeats = n.args.get("repeats")
    if n.overload != "self_int" or not isinstance(repeats, int):
        raise n.unsupported("repeat_interleave with counts given as a tensor")
    x = n.tensor("self")
    dim = n.args.get("dim")
    if dim is None:
        x = n.em.reshape(x, (prod_dims(vtype(x).shape),))
        dim = 0
    shape = vtype(x).shape
    dim = norm_dim(dim, len(shape))
    unit = (*shape[:dim + 1], 1, *shape[dim + 1:])
    spread = (*shape[:dim + 1], repeats, *shape[dim + 1:])
    y = n.em.broadcast_to(n.em.reshape(x, unit), spread)
    return n.em.reshape(y, n.out.shape)


@torch_op("slice_scatter", "select_scatter")
def lower_slice_scatter(n: TorchNode) -> Value:
    """`x` with `src` written over one slice (or one index) of it: functionalization's form of a write into a
    view (`y[..., :n].copy_(a)`), a `solar.insert` (the destination updated where `src` lands)."""
    from .shape import _bound, full_entries, select_index

    x, src = n.tensor("self"), n.tensor("src")
    t = vtype(x)
    dim = norm_dim(n.get("dim", 0), t.rank)
    if n.op == "aten::select_scatter":
        return n.em.insert(src, x, select_index(x, dim, n["index"]))
    size = t.shape[dim]
    step = n.get("step", 1)
    entries = full_entries(t.shape)
    entries[dim] = SliceEntry(start=_bound(n.args.get("start"), size, 0), stop=_bound(n.args.get("end"), size, size),
                              step=IntLit(step) if step != 1 else None)
    return n.em.insert(src, x, entries)
