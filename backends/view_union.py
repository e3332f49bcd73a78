"""The distinct elements several slices of one tensor cover, for backends/cost.py: a unit reading two
overlapping views of a tensor (`x[0:n-1]` and `x[1:n]`) reads each shared element once, not once per view.

Each slice chain (a `solar.slice` of a slice ... of the root tensor) is a strided box in the root's
coordinates: an ISL image of the view's own index box. The union of the boxes is counted with barvinok's
symbolic `card()` (exact, also with size parameters; nothing is enumerated)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache

import islpy as isl

from solar.ir.analysis.formula import Number, fmax, fmax_of
from solar.ir.analysis.isl_model import UnsupportedForISL, dim_text, evaluate, isl_expr, isl_name
from solar.ir.expr import Expr
from solar.ir.index_map import NotAffine
from solar.ir.ops import GroupOp, Op, SliceOp, Value

from .loop_reads import slice_mentions


def _through_group(v: Value) -> Value | None:
    """The value a fusion group yields for its result `v`, or None when `v` is no group's result."""
    owner = v.owner
    if isinstance(owner, GroupOp):
        return owner.body[-1].operands[owner.results.index(v)]
    return None


def slice_root(v: Value) -> tuple[Value, list[SliceOp]]:
    """The tensor `v` slices (through slices and fusion groups) and the slices from it to `v`, outermost
    (on the root) first. A value that is no slice is its own root, with no slices."""
    chain: list[SliceOp] = []
    while True:
        inner = _through_group(v)
        if inner is not None:
            v = inner
        elif isinstance(v.owner, SliceOp):
            chain.append(v.owner)
            v = v.owner.source
        else:
            return v, chain[::-1]


def one_to_one(root: Value) -> bool:
    """Whether every element of `root` is a distinct element of the tensor it views: only views whose
    declared index map is a bijection (reshapes, permutes, flips) and fusion groups between them, no
    broadcast that shows one element several times, no window."""
    while True:
        inner = _through_group(root)
        owner = root.owner
        if inner is not None:
            root = inner
        elif owner is not None and owner.is_view and owner.operands and _bijective(owner):
            root = owner.operands[0]
        else:
            return owner is None or not owner.is_view or not owner.operands


def _bijective(view: Op) -> bool:
    try:
        imap = view.index_map({})
    except (KeyError, NotAffine, TypeError, ValueError):  # a map that needs the sizes' values: a window
        return False
    return imap is not None and imap.one_to_one


def _box_text(v: Value, chain: Sequence[SliceOp], names: dict[str, str]) -> str:
    """`{ V[i...] -> R[root coordinates] : i in v's shape }` as ISL text (without the parameters): each
    slice maps its view's range coordinates to `start + step * i` and fixes its index entries."""
    assert v.type is not None
    view = [f"i{k}" for k in range(v.type.rank)]
    bounds = [f"0 <= i{k} < {dim_text(d, names)}" for k, d in enumerate(v.type.shape)]
    coords = list(view)
    for s in reversed(chain):  # from v back to the root
        it = iter(coords)
        outer: list[str] = []
        for e in s.entries:
            if e.index is not None:
                outer.append(f"({isl_expr(e.index, names)})")
                continue
            start = isl_expr(e.start, names) if e.start is not None else "0"
            step = isl_expr(e.step, names) if e.step is not None else "1"
            outer.append(f"({start} + {step} * {next(it)})")
        coords = outer
    return f"{{ V[{', '.join(view)}] -> R[{', '.join(coords)}] : {' and '.join(bounds) or 'true'} }}"


@lru_cache(maxsize=4096)
def _union(prefix: str, context: str, boxes: tuple[str, ...]) -> tuple[isl.Set, list[isl.Set]]:
    ctx = isl.Set(prefix + context)
    sets = [isl.Map(prefix + b).intersect_params(ctx).range() for b in boxes]
    union = sets[0]
    for s in sets[1:]:
        union = union.union(s)
    return union, sets


@lru_cache(maxsize=4096)
def _card(prefix: str, context: str, boxes: tuple[str, ...]) -> isl.PwQPolynomial:
    return _union(prefix, context, boxes)[0].card()


def union_bytes(members: Sequence[Value], params: Sequence[str], values: Mapping[str, Number],
                loops: Mapping[str, tuple[Expr, Expr]]) -> Number | None:
    """The bytes of the distinct root elements that the slice chains `members` (of one root) cover
    together, at one run of the solar.for loops around them (`loops`: index -> [lower, upper)), or None
    when ISL cannot express a box or the union depends on a loop index. Where it does, boxes that are
    pairwise disjoint at every iteration still give the sum of their sizes."""
    names = {p: isl_name(p) for p in params}
    chains = [slice_root(v)[1] for v in members]
    moving = any(slice_mentions(s) for c in chains for s in c)
    constraints = [f"{names[p]} >= 1" for p in params]
    if moving:
        names.update({"%" + var: isl_name("t_" + var) for var in loops})
        constraints += [f"{isl_expr(lo, names)} <= {names['%' + var]} < {isl_expr(hi, names)}"
                        for var, (lo, hi) in loops.items()]
    isl_params = [names[p] for p in params] + ([names["%" + var] for var in loops] if moving else [])
    prefix = f"[{', '.join(isl_params)}] -> " if isl_params else ""
    context = "{ : " + (" and ".join(constraints) or "true") + " }"
    try:
        boxes = tuple(_box_text(v, c, names) for v, c in zip(members, chains, strict=True))
        if not moving:
            n = evaluate(_card(prefix, context, boxes), values)
        else:
            sets = _union(prefix, context, boxes)[1]
            disjoint = all(a.intersect(b).is_empty() for k, a in enumerate(sets) for b in sets[k + 1:])
            # Each box is its view's elements, one root element each (a slice repeats nothing).
            return sum(v.type.nbytes(values) for v in members if v.type is not None) if disjoint else None
    except (UnsupportedForISL, isl.Error, KeyError):
        return None
    root = slice_root(members[0])[0]
    assert root.type is not None
    return None if n is None else root.type.dtype.bytes_of(n)


def shared_reads(figures: Mapping[Value, Number], params: Sequence[str], values: Mapping[str, Number],
                 loops: Mapping[str, tuple[Expr, Expr]]) -> Number:
    """The bytes a unit reads of one tensor through several views of it, each with its own figure (in the
    tensor's bytes), at least. The largest figure always is one: the views may share every element, and a
    reader of a permute or a broadcast need not read what another view reads. Views that slice one root
    (through reshapes and permutes only, so each of their elements is a distinct element of the tensor)
    cover the union U of their boxes; a view whose figure is r of its b bytes misses at most b - r of its
    box, so the unit reads at least U - Σ (b - r): the union itself where every view is read in full. That
    is arithmetic on the figures, so it is the same formula with symbolic sizes as at a point."""
    least = fmax_of(figures.values())
    by_root: dict[Value, list[Value]] = {}
    for v in figures:
        root = slice_root(v)[0]
        if v.type is not None and one_to_one(root):
            by_root.setdefault(root, []).append(v)
    for members in by_root.values():
        if len(members) > 1:
            union = union_bytes(members, params, values, loops)
            if union is not None:
                missed = sum(fmax(v.type.nbytes(dict(values)) - figures[v], 0) for v in members if v.type is not None)
                least = fmax(least, union - missed)
    return least
