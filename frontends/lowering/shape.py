"""Views and data movement: reshape, permute, expand, slice, select, cat, stack, split, pad, flip, repeat.

Pure views become composition ops (no kernel: they cost nothing in the model); ops that move data with an
affine pattern a library runs as a kernel (flip, pad, tril) become one copy kernel.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from solar.ir.expr import Binary, Expr, IntLit, Unary, format_expr
from solar.ir.expr_values import int_range
from solar.ir.ops import SliceEntry, Value
from solar.ir.types import Dim, dims_equal

from .core import (
    Shape,
    access,
    canon,
    dexpr,
    is_empty,
    lit,
    loops,
    norm_dim,
    pointwise,
    select,
    ttype,
    vtype,
)
from .registry import TorchNode, torch_op

BIG = 1 << 62


@torch_op("view", "_unsafe_view", "reshape", "view_copy", "flatten", "unflatten", "_reshape_alias", "view_as",
          "reshape_as", "squeeze", "squeeze_copy", "unsqueeze", "unsqueeze_copy", "ravel")
def lower_view(n: TorchNode) -> Value:
    # The exported metadata already has the result shape: a reshape to it covers every view of this kind.
    return n.em.reshape(n.tensor("self"), n.out.shape)


@torch_op("alias", "detach", "detach_", "clone", "contiguous", "lift_fresh_copy", "lift_fresh", "alias_copy",
          "detach_copy")
def lower_identity(n: TorchNode) -> Value:
    return n.tensor("self")


@torch_op("copy", "copy_")
def lower_copy(n: TorchNode) -> Value:
    """`dst.copy_(src)` (left in the graph where `dst` is a tensor attribute: export does not functionalize
    constants; a recurrent net's `self.hidden.copy_(h0)`) and its functional `copy`: the result is `src` in
    `dst`'s shape and dtype, and export points every later read of `dst` at it. A conversion or a
    broadcast is one copy kernel, as eager runs it."""
    src = n.tensor("src")
    t = vtype(src)
    if t.dtype == n.out.dtype and len(t.shape) == len(n.out.shape) and \
            all(dims_equal(a, b) for a, b in zip(t.shape, n.out.shape, strict=True)):
        return src
    return pointwise(n.em, [src], n.out.dtype, lambda a: a[0], out_shape=n.out.shape)


@torch_op("expand", "expand_as", "broadcast_to", "expand_copy")
def lower_expand(n: TorchNode) -> Value:
    return n.em.broadcast_to(n.tensor("self"), n.out.shape)


@torch_op("permute", "permute_copy")
def lower_permute(n: TorchNode) -> Value:
    x = n.tensor("self")
    rank = vtype(x).rank
    return n.em.permute(x, [norm_dim(d, rank) for d in n["dims"]])


@torch_op("transpose", "swapaxes", "swapdims", "transpose_copy")
def lower_transpose(n: TorchNode) -> Value:
    x = n.tensor("self")
    rank = vtype(x).rank
    if rank == 0:  # torch allows dims 0 and -1 of a scalar: nothing moves
        return x
    a = norm_dim(n.args.get("dim0", n.args.get("axis0", 0)), rank)
    b = norm_dim(n.args.get("dim1", n.args.get("axis1", 1)), rank)
    perm = list(range(rank))
    perm[a], perm[b] = perm[b], perm[a]
    return n.em.permute(x, perm)


@torch_op("t", "numpy_T", "mT", "adjoint")
def lower_t(n: TorchNode) -> Value:
    x = n.tensor("self")
    rank = vtype(x).rank
    if rank < 2:
        return x
    perm = list(range(rank))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    if n.op == "aten::numpy_T":
        perm = list(reversed(range(rank)))
    return n.em.permute(x, perm)


@torch_op("movedim", "moveaxis")
def lower_movedim(n: TorchNode) -> Value:
    x = n.tensor("self")
    rank = vtype(x).rank
    src, dst = n["source"], n["destination"]
    src = [src] if isinstance(src, int) else list(src)
    dst = [dst] if isinstance(dst, int) else list(dst)
    src = [norm_dim(d, rank) for d in src]
    dst = [norm_dim(d, rank) for d in dst]
    order = [d for d in range(rank) if d not in src]
    perm = [-1] * rank
    for s, d in zip(src, dst, strict=True):
        perm[d] = s
    it = iter(order)
    perm = [p if p >= 0 else next(it) for p in perm]
    return n.em.permute(x, perm)


def full_entries(shape: Shape) -> list[SliceEntry]:
    return [SliceEntry(start=IntLit(0), stop=dexpr(d)) for d in shape]


def _bound(v: Any, size: Dim, default: Dim) -> Expr:
    """A slice bound as an affine expression, with Python's negative and out-of-range conventions."""
    if v is None:
        return dexpr(default)
    if isinstance(v, int):
        if v >= BIG // 2 or (isinstance(size, int) and v >= size):
            return dexpr(size)
        if v < 0:
            if isinstance(size, int):
                return IntLit(max(size + v, 0))
            return dexpr(canon(Binary("+", size, IntLit(v))))
        return IntLit(v)
    return dexpr(canon(v))


def slice_value(n: TorchNode, x: Value, dim: int, start: Any, end: Any, step: int) -> Value:
    t = vtype(x)
    dim = norm_dim(dim, t.rank)
    size = t.shape[dim]
    entries = full_entries(t.shape)
    lo, hi = _bound(start, size, 0), _bound(end, size, size)
    if (isinstance(start, int) and start < 0 and not isinstance(size, int) and step == 1
            and dims_equal(n.out.shape[dim], size)):
        # `x[-k:]` of a symbolic size that export held below k (a cache shorter than its window): Python
        # clamps the start to 0, and the result is all of `x`.
        lo = IntLit(0)
    entries[dim] = SliceEntry(start=lo, stop=hi, step=IntLit(step) if step != 1 else None)
    if isinstance(lo, IntLit) and lo.value == 0 and step == 1 and dims_equal(canon(hi), size):
        return x
    return n.em.slice(x, entries, n.out.shape)


@torch_op("slice", "slice_copy")
def lower_slice(n: TorchNode) -> Value:
    return slice_value(n, n.tensor("self"), n.get("dim", 0), n.args.get("start"), n.args.get("end"),
                       n.get("step", 1))


@torch_op("narrow", "narrow_copy")
def lower_narrow(n: TorchNode) -> Value:
    start = n["start"]
    end = canon(Binary("+", dexpr(start), dexpr(n["length"])))
    return slice_value(n, n.tensor("self"), n["dim"], start, end, 1)


def select_index(x: Value, dim: int, index: Any) -> list[SliceEntry]:
    t = vtype(x)
    entries = full_entries(t.shape)
    size = t.shape[dim]
    if isinstance(index, int) and index < 0:
        idx = IntLit(size + index) if isinstance(size, int) else dexpr(canon(Binary("+", size, IntLit(index))))
    else:
        idx = dexpr(canon(index))
    entries[dim] = SliceEntry(index=idx)
    return entries


@torch_op("select", "select_copy")
def lower_select(n: TorchNode) -> Value:
    x = n.tensor("self")
    dim = norm_dim(n["dim"], vtype(x).rank)
    return n.em.slice(x, select_index(x, dim, n["index"]), n.out.shape)


@torch_op("unbind", "unbind_copy")
def lower_unbind(n: TorchNode) -> list[Value]:
    x = n.tensor("self")
    t = vtype(x)
    dim = norm_dim(n.get("dim", 0), t.rank)
    size = t.shape[dim]
    if not isinstance(size, int):
        raise n.unsupported(f"unbind along a symbolic dimension ({size})")
    shape = t.shape[:dim] + t.shape[dim + 1:]
    return [n.em.slice(x, select_index(x, dim, i), shape) for i in range(size)]


@torch_op("cat", "concat", "concatenate")
def lower_cat(n: TorchNode) -> Value:
    # torch skips 1-D empty tensors (an empty KV cache before its first append: `cat([tensor([]), k])`).
    xs = [x for x in n["tensors"] if isinstance(x, Value) and not _is_empty_1d(x)]
    if not xs:
        raise n.unsupported("cat of no tensors")
    # An empty operand adds nothing (an empty cache, a rotary's empty pass-through half): the result is the
    # others joined, with no copy where one is left. Operands all empty give an empty result (docs/ir.md).
    xs = [x for x in xs if not is_empty(x)] or xs
    if len(xs) == 1:
        return xs[0]  # appending to an empty tensor: the result is the appended tensor itself
    rank = vtype(xs[0]).rank
    dim = norm_dim(n.get("dim", 0), rank)
    return n.em.concat(xs, dim)


def _is_empty_1d(x: Value) -> bool:
    return is_empty(x) and vtype(x).rank == 1


@torch_op("stack")
def lower_stack(n: TorchNode) -> Value:
    xs = list(n["tensors"])
    t = vtype(xs[0])
    dim = norm_dim(n.get("dim", 0), t.rank + 1)
    shape = (*t.shape[:dim], 1, *t.shape[dim:])
    parts = [n.em.reshape(x, shape) for x in xs]
    return n.em.concat(parts, dim)


@torch_op("hstack", "vstack")
def lower_hvstack(n: TorchNode) -> Value:
    xs = list(n["tensors"])
    t = vtype(xs[0])
    if n.op == "aten::hstack":
        return n.em.concat(xs, 0 if t.rank == 1 else 1)
    if t.rank == 1:
        xs = [n.em.reshape(x, (1, *vtype(x).shape)) for x in xs]
    return n.em.concat(xs, 0)


def split_sizes(n: TorchNode, x: Value, dim: int, sizes: Sequence[int]) -> list[Value]:
    t = vtype(x)
    out = []
    start = 0
    for s in sizes:
        entries = full_entries(t.shape)
        entries[dim] = SliceEntry(start=IntLit(start), stop=IntLit(start + s))
        shape = list(t.shape)
        shape[dim] = s
        out.append(n.em.slice(x, entries, tuple(shape)) if (start, s) != (0, t.shape[dim]) else x)
        start += s
    return out


@torch_op("split", "split_with_sizes", "split_copy", "split_with_sizes_copy")
def lower_split(n: TorchNode) -> list[Value]:
    x = n.tensor("self")
    t = vtype(x)
    dim = norm_dim(n.get("dim", 0), t.rank)
    size = t.shape[dim]
    if not isinstance(size, int):
        raise n.unsupported(f"split along a symbolic dimension ({size})")
    s = n.args.get("split_size", n.args.get("split_sizes", n.args.get("split_size_or_sizes")))
    sizes = [min(s, size - k) for k in range(0, size, s)] if isinstance(s, int) else list(s)
    return split_sizes(n, x, dim, sizes)


@torch_op("chunk")
def lower_chunk(n: TorchNode) -> list[Value]:
    x = n.tensor("self")
    t = vtype(x)
    dim = norm_dim(n.get("dim", 0), t.rank)
    size = t.shape[dim]
    if not isinstance(size, int):
        raise n.unsupported(f"chunk along a symbolic dimension ({size})")
    step = -(-size // n["chunks"])
    return split_sizes(n, x, dim, [min(step, size - k) for k in range(0, size, step)])


@torch_op("tensor_split")
def lower_tensor_split(n: TorchNode) -> list[Value]:
    x = n.tensor("self")
    t = vtype(x)
    dim = norm_dim(n.get("dim", 0), t.rank)
    size = t.shape[dim]
    if not isinstance(size, int):
        raise n.unsupported("tensor_split along a symbolic dimension")
    sections = n.args.get("sections")
    if isinstance(sections, int):
        q, r = divmod(size, sections)
        sizes = [q + 1 if k < r else q for k in range(sections)]
    else:
        cuts = [0, *list(n.args.get("indices") or n.args.get("tensor_indices_or_sections")), size]
        sizes = [b - a for a, b in itertools.pairwise(cuts)]
    return split_sizes(n, x, dim, sizes)


@torch_op("repeat", "tile")
def lower_repeat(n: TorchNode) -> Value:
    # (a, b).repeat(r, s) = reshape (1, a, 1, b) → broadcast (r, a, s, b) → reshape (r·a, s·b): no kernel.
    x = n.tensor("self")
    t = vtype(x)
    reps = list(n.args.get("repeats", n.args.get("dims")))
    if len(reps) < t.rank:
        reps = [1] * (t.rank - len(reps)) + reps
    shape = (1,) * (len(reps) - t.rank) + t.shape
    em = n.em
    inter: list[Dim] = []
    spread: list[Dim] = []
    for r, d in zip(reps, shape, strict=True):
        inter += [1, d]
        spread += [r, d]
    y = em.reshape(x, tuple(inter))
    y = em.broadcast_to(y, tuple(spread))
    return em.reshape(y, n.out.shape)


@torch_op("flip")
def lower_flip(n: TorchNode) -> Value:
    x = n.tensor("self")
    return n.em.flip(x, (norm_dim(d, vtype(x).rank) for d in n["dims"]))


@torch_op("roll")
def lower_roll(n: TorchNode) -> Value:
    x = n.tensor("self")
    t = vtype(x)
    shifts, dims = list(n["shifts"]), list(n.get("dims", []))
    if not dims:
        # Over the flattened tensor: a view as one axis, rolled, viewed back.
        if not all(isinstance(d, int) for d in t.shape) or len(shifts) != 1:
            raise n.unsupported("roll of the flattened tensor with symbolic sizes or several shifts")
        total = 1
        for d in t.shape:
            total *= int(d)
        flat = n.em.reshape(x, [total])
        s = shifts[0] % total if total else 0
        if s == 0:
            return x
        a, b = split_sizes(n, flat, 0, [total - s, s])
        return n.em.reshape(n.em.concat([b, a], 0), list(t.shape))
    total: dict[int, int] = {}  # a dimension named twice rolls by the sum of its shifts
    for s, d in zip(shifts, dims, strict=True):
        axis = norm_dim(d, t.rank)
        total[axis] = total.get(axis, 0) + s
    if not all(isinstance(t.shape[d], int) for d in total):
        raise n.unsupported("roll along a symbolic dimension")
    return n.em.roll(x, list(total.values()), list(total))


@torch_op("constant_pad_nd", "pad")
def lower_pad(n: TorchNode) -> Value:
    x = n.tensor("self")
    t = vtype(x)
    pad = list(n["pad"])
    mode = n.get("mode", "constant")
    # pad lists (left, right) pairs from the last dimension backwards; negative entries crop.
    lows = [0] * t.rank
    highs = [0] * t.rank
    for k in range(len(pad) // 2):
        d = t.rank - 1 - k
        lows[d], highs[d] = pad[2 * k], pad[2 * k + 1]
    if mode != "constant":
        return border_pad(n, x, lows, highs, mode)
    value = n.get("value", 0.0) or 0.0
    out = n.out.shape
    kb = n.em.kernel([(x, "X")], [("Y", ttype(out, t.dtype))])
    with loops(kb, out) as idx:
        kb.assign(access("Y", idx), lit(value, t.dtype))
    # Copy the kept part of the input: crop where a pad is negative.
    lo_in = [_crop(n, lo) for lo in lows]
    hi_in = [canon(Binary("-", dexpr(d), dexpr(_crop(n, hi)))) for d, hi in zip(t.shape, highs, strict=True)]
    with loops(kb, hi_in, "j", lower=lo_in) as jdx:
        dst = [dexpr(canon(Binary("+", j, dexpr(lo)))) if not is_zero(lo) else j
               for j, lo in zip(jdx, lows, strict=True)]
        kb.assign(access("Y", dst), access("X", jdx))
    return kb.results[0]


@torch_op("reflection_pad1d", "reflection_pad2d", "reflection_pad3d", "replication_pad1d", "replication_pad2d",
          "replication_pad3d", "_pad_circular")
def _crop(n: TorchNode, amount: Dim) -> Dim:
    """How much a pad amount crops: `-amount` where it is negative, else 0. A symbolic amount (Swin's
    `(window - W % window) % window`) must have one sign for every size, or the IR would need a branch."""
    if isinstance(amount, int):
        return max(-amount, 0)
    lo, hi = int_range(amount)
    if lo >= 0:
        return 0
    if hi <= 0:
        return canon(Unary("-", amount))
    raise n.unsupported(f"a pad amount `{format_expr(amount)}` that pads for some sizes and crops for others")


def is_zero(d: Dim) -> bool:
    return isinstance(d, int) and d == 0


def lower_named_pad(n: TorchNode) -> Value:
    x = n.tensor("self")
    rank = vtype(x).rank
    pad = list(n["padding"] if "padding" in n.args else n["pad"])
    lows, highs = [0] * rank, [0] * rank
    for k in range(len(pad) // 2):
        lows[rank - 1 - k], highs[rank - 1 - k] = pad[2 * k], pad[2 * k + 1]
    mode = "reflect" if "reflection" in n.op else "replicate" if "replication" in n.op else "circular"
    return border_pad(n, x, lows, highs, mode)


def _border_source(o: Expr, lo: int, size: int, region: str, mode: str) -> Expr:
    """The input index that output index `o` of one region (left halo, interior, right halo) reads: affine
    in `o` in every region, which is why each region is its own loop nest."""
    if region == "in":
        return o if lo == 0 else canon(Binary("-", o, IntLit(lo)))
    if mode == "replicate":
        return IntLit(0 if region == "left" else size - 1)
    if mode == "circular":
        return canon(Binary("+", o, IntLit(size - lo if region == "left" else -lo - size)))
    # reflect: the edge element is not repeated (o = lo - 1 reads 1; o = lo + size reads size - 2)
    if region == "left":
        return canon(Binary("-", IntLit(lo), o))
    return canon(Binary("-", IntLit(2 * size - 2 + lo), o))


def border_pad(n: TorchNode, x: Value, lows: list[int], highs: list[int], mode: str) -> Value:
    """Reflect, replicate and circular padding: one copy kernel whose body is a loop nest per combination
    of regions (left halo, interior, right halo) of the padded dims, each with an affine source index, so
    every output element is written once and every access is affine."""
    t = vtype(x)
    if mode not in ("reflect", "replicate", "circular"):
        raise n.unsupported(f"padding mode '{mode}'")
    symbolic = [format_expr(a) for a in (*lows, *highs) if not isinstance(a, int)]
    if symbolic:
        raise n.unsupported(f"{mode} padding by a symbolic amount (`{symbolic[0]}`)")
    padded = [d for d in range(t.rank) if lows[d] or highs[d]]
    for d in padded:
        size = t.shape[d]
        if not isinstance(size, int):
            raise n.unsupported(f"{mode} padding along a symbolic dimension")
        if lows[d] < 0 or highs[d] < 0:
            raise n.unsupported(f"{mode} padding with a negative (cropping) amount")
        limit = size - 1 if mode == "reflect" else size if mode == "circular" else BIG
        if max(lows[d], highs[d]) > limit:
            raise n.unsupported(f"{mode} padding of {max(lows[d], highs[d])} on a dimension of {size}")
    out = n.out.shape
    kb = n.em.kernel([(x, "X")], [("Y", ttype(out, t.dtype))])
    spans = {"left": lambda d: (0, lows[d]), "in": lambda d: (lows[d], lows[d] + int(t.shape[d])),
             "right": lambda d: (lows[d] + int(t.shape[d]), lows[d] + int(t.shape[d]) + highs[d])}
    for regions in itertools.product(*[("left", "in", "right")] * len(padded)):
        where = dict(zip(padded, regions, strict=True))
        ranges = [spans[where[d]](d) if d in where else (0, out[d]) for d in range(t.rank)]
        if any(isinstance(a, int) and isinstance(b, int) and b <= a for a, b in ranges):
            continue
        with loops(kb, [b for _, b in ranges], "i", lower=[a for a, _ in ranges]) as idx:
            src = [_border_source(i, lows[d], int(t.shape[d]), where[d], mode) if d in where else i
                   for d, i in enumerate(idx)]
            kb.assign(access("Y", idx), access("X", src))
    return kb.results[0]


@torch_op("unfold")
def lower_unfold(n: TorchNode) -> Value:
    """`x.unfold(dim, size, step)`: windows as a new last axis. A view in PyTorch, so composition ops here
    (no kernel, no traffic): non-overlapping windows (step = size) are a slice, a reshape and a permute;
    overlapping ones are `size` strided slices concatenated along the new axis."""
    x = n.tensor("self")
    t = vtype(x)
    dim, size, step = norm_dim(n["dimension"], t.rank), int(n["size"]), int(n["step"])
    count = n.out.shape[dim]
    if not isinstance(count, int):
        raise n.unsupported("unfold along a symbolic dimension")
    shape = list(t.shape)
    if step == size:
        entries = full_entries(t.shape)
        entries[dim] = SliceEntry(start=IntLit(0), stop=IntLit(count * size))
        shape[dim] = count * size
        y = x if dims_equal(t.shape[dim], count * size) else n.em.slice(x, entries, shape)
        split = [*shape[:dim], count, size, *shape[dim + 1:]]
        y = n.em.reshape(y, split)
        perm = [k for k in range(len(split)) if k != dim + 1] + [dim + 1]
        return n.em.permute(y, perm)
    parts = []
    shape[dim] = count
    for j in range(size):
        entries = full_entries(t.shape)
        entries[dim] = SliceEntry(start=IntLit(j), stop=IntLit(j + step * (count - 1) + 1),
                                  step=IntLit(step) if step != 1 else None)
        parts.append(n.em.reshape(n.em.slice(x, entries, shape), [*shape, 1]))
    return n.em.concat(parts, len(shape))


def _tri(n: TorchNode, upper: bool) -> Value:
    x = n.tensor("self")
    t = vtype(x)
    k = n.get("diagonal", 0)
    kb = n.em.kernel([(x, "X")], [("Y", t)])
    with loops(kb, t.shape) as idx:
        i, j = idx[-2], idx[-1]
        keep = Binary(">=", Binary("-", j, i), IntLit(k)) if upper else Binary("<=", Binary("-", j, i), IntLit(k))
        zero = lit(0, t.dtype)
        # An index comparison as a value: the selected element or zero (one select per element).
        kb.assign(access("Y", idx), select(keep, access("X", idx), zero))
    return kb.results[0]


@torch_op("tril")
def lower_tril(n: TorchNode) -> Value:
    return _tri(n, upper=False)


@torch_op("triu")
def lower_triu(n: TorchNode) -> Value:
    return _tri(n, upper=True)


@torch_op("diagonal", "diagonal_copy")
def lower_diagonal(n: TorchNode) -> Value:
    x = n.tensor("self")
    t = vtype(x)
    off = n.get("offset", 0)
    d1, d2 = norm_dim(n.get("dim1", 0), t.rank), norm_dim(n.get("dim2", 1), t.rank)
    out = n.out.shape
    kb = n.em.kernel([(x, "X")], [("Y", ttype(out, t.dtype))])
    with loops(kb, out) as idx:
        rest = iter(idx[:-1])
        k = idx[-1]
        src: list[Expr] = []
        for dd in range(t.rank):
            if dd == d1:
                src.append(k if off >= 0 else k + IntLit(-off))
            elif dd == d2:
                src.append(k + IntLit(off) if off > 0 else k)
            else:
                src.append(next(rest))
        kb.assign(access("Y", idx), access("X", src))
    return kb.results[0]


@torch_op("pixel_shuffle")
def lower_pixel_shuffle(n: TorchNode) -> Value:
    x = n.tensor("self")
    t = vtype(x)
    r = n["upscale_factor"]
    *b, c, h, w = t.shape
    if not isinstance(c, int):
        raise n.unsupported("pixel_shuffle with symbolic channels")
    em = n.em
    y = em.reshape(x, (*b, c // (r * r), r, r, h, w))
    k = len(b)
    y = em.permute(y, [*range(k), k, k + 3, k + 1, k + 4, k + 2])
    return em.reshape(y, n.out.shape)


@torch_op("pixel_unshuffle")
def lower_pixel_unshuffle(n: TorchNode) -> Value:
    x = n.tensor("self")
    t = vtype(x)
    r = n["downscale_factor"]
    *b, c, h, w = t.shape
    if not isinstance(h, int) or not isinstance(w, int):
        raise n.unsupported("pixel_unshuffle with symbolic spatial sizes")
    em = n.em
    k = len(b)
    y = em.reshape(x, (*b, c, h // r, r, w // r, r))
    y = em.permute(y, [*range(k), k, k + 2, k + 4, k + 1, k + 3])
    return em.reshape(y, n.out.shape)


@torch_op("channel_shuffle", "native_channel_shuffle")
def lower_channel_shuffle(n: TorchNode) -> Value:
    x = n.tensor("self")
    t = vtype(x)
    g = n["groups"]
    b, c, *rest = t.shape
    if not isinstance(c, int):
        raise n.unsupported("channel_shuffle with symbolic channels")
    em = n.em
    y = em.reshape(x, (b, g, c // g, *rest))
    y = em.permute(y, [0, 2, 1, *range(3, 3 + len(rest))])
    return em.reshape(y, t.shape)
