"""Views, broadcasts and constants read by the einsums of a chain, as the tiling problem sees them
(docs/tiling.md, "Views, broadcasts and constants"): a read of a view is a read of the tensor it views
through remapped subscripts (permute: the entries reordered; slice: `start + step·entry`, an index entry
a constant; a reshape that splits dimensions: the entries of each split folded into one affine entry), a
read of a broadcast is a read of its source with the broadcast dimensions left out (a size-1 source
dimension is the constant 0), and a constant is read from no tensor at all (it moves no data)."""

from __future__ import annotations

from collections.abc import Callable

from solar.backends.tiling_problem import EinsumDesc, Unfusable
from solar.ir.einsum_spec import index_ranges, parse_spec, parse_where
from solar.ir.expr import Binary, Expr, IndexRef, IntLit, evaluate_int, linear_form
from solar.ir.ops import BroadcastOp, ConstantOp, PermuteOp, ReshapeOp, SliceOp, Value


def _shape(v: Value, values: dict[str, int]) -> tuple[int, ...]:
    assert v.type is not None
    return v.type.concrete_shape(values)


def _number(e: Expr | None, default: int, values: dict[str, int]) -> int:
    if e is None:
        return default
    try:
        return evaluate_int(e, dict(values))
    except (KeyError, TypeError, ValueError) as err:
        raise Unfusable("a slice bound that is not a number: not modelled") from err


def _plus(a: Expr, b: Expr) -> Expr:
    return Binary("+", a, b)


def _times(k: int, e: Expr) -> Expr:
    return e if k == 1 else Binary("*", IntLit(k), e)


def _reshape(term: list[Expr], result: tuple[int, ...], source: tuple[int, ...]) -> list[Expr]:
    """The source entries of a reshape read through `term`: each source dimension is a run of result
    dimensions whose sizes multiply to its size (a split; row-major, so the entry is Σ stride·entry), size-1
    dimensions on either side taking no part; a result dimension made of several source dimensions (a
    merge) is not affine."""
    merge = Unfusable("a reshape that merges dimensions is read: not modelled (not affine)")
    out: list[Expr] = []
    r = 0
    for size in source:
        if size == 1:
            out.append(IntLit(0))
            continue
        entry: Expr | None = None
        covered = 1
        while covered < size:
            if r >= len(result):
                raise merge
            n = result[r]
            if n > 1:
                if size % (covered * n):
                    raise merge
                entry = term[r] if entry is None else _plus(_times(n, entry), term[r])
                covered *= n
            r += 1
        assert entry is not None
        out.append(entry)
    if any(n != 1 for n in result[r:]):
        raise merge
    return out


def resolve(v: Value, term: tuple[Expr, ...], values: dict[str, int]) -> tuple[Value, tuple[Expr, ...]] | None:
    """The tensor a read of `v` through `term` reads, past views and broadcasts, and its entries there;
    None for a constant (no data)."""
    entries = list(term)
    while True:
        owner = v.owner
        if isinstance(owner, ConstantOp):
            return None
        if not isinstance(owner, PermuteOp | BroadcastOp | SliceOp | ReshapeOp) or not owner.operands:
            return v, tuple(entries)
        src = owner.operands[0]
        shape, source = _shape(v, values), _shape(src, values)
        if isinstance(owner, PermuteOp):
            moved: list[Expr] = [IntLit(0)] * len(source)
            for d, p in enumerate(owner.attrs["perm"]):
                moved[p] = entries[d]
            entries = moved
        elif isinstance(owner, BroadcastOp):
            dims = owner.attrs["dims"]
            entries = [entries[dims[i]] if source[i] == shape[dims[i]] else IntLit(0) for i in range(len(source))]
        elif isinstance(owner, SliceOp):
            sliced: list[Expr] = []
            k = 0
            for e in owner.entries:
                if e.index is not None:
                    sliced.append(IntLit(_number(e.index, 0, values)))
                    continue
                start, step = _number(e.start, 0, values), _number(e.step, 1, values)
                sliced.append(_plus(_times(step, entries[k]), IntLit(start)) if start else _times(step, entries[k]))
                k += 1
            entries = sliced
        else:
            entries = _reshape(entries, shape, source)
        v = src


def render(e: Expr) -> str:
    """One subscript entry in the einsum syntax: a letter, or an affine window in parentheses."""
    form = linear_form(e)
    if form is None:
        raise Unfusable("a subscript that is not affine: not modelled")
    terms, const = form
    if len(terms) == 1 and terms[0][1] == 1 and const == 0:
        return terms[0][0].lstrip("%")
    parts = [(f"{c}" if abs(c) != 1 else ("-" if c < 0 else "")) + n.lstrip("%") for n, c in terms]
    if const or not parts:
        parts.append(str(const))
    text = "+".join(parts).replace("+-", "-")
    return f"({text})"


def through_views(d: EinsumDesc, op_inputs: list[Value], name_of: Callable[[Value], str],
                  values: dict[str, int]) -> EinsumDesc:
    """`d` (an einsum of the IR) reading the tensors its inputs view: operands re-pointed and re-subscripted,
    constants dropped. `name_of(value)` names a tensor of the chain."""
    spec = parse_spec(d.spec)
    where = parse_where(d.where) if d.where else []
    ranges = index_ranges(spec, [s for _, _, s, _ in d.inputs] + [d.output[2]], where)
    inputs, terms = [], []
    for (_, label, _, _), term, v in zip(d.inputs, spec.inputs, op_inputs, strict=True):
        read = resolve(v, term, values)
        if read is None:
            continue
        root, entries = read
        assert root.type is not None
        inputs.append((name_of(root), label, _shape(root, values), root.type.dtype.itemsize))
        terms.append("".join(render(e) for e in entries))
    if not inputs:
        raise Unfusable(f"@{d.name} reads only constants: not modelled")
    text = ",".join(terms) + "->" + d.spec.split("->", 1)[1]
    # An index that no longer stands alone in a dimension (folded into a split's entry, or read only from a
    # constant) keeps its range through a where-constraint.
    new = parse_spec(text)
    alone = {e.name for t in (*new.inputs, new.output) for e in t if isinstance(e, IndexRef)}
    bounds = [f"{u}<{ranges[u]}" for u in new.indices if u not in alone]
    if any(u not in new.indices for u in spec.indices):
        raise Unfusable(f"@{d.name} reduces over an index only a constant has: not modelled")
    clause = ",".join(([d.where] if d.where else []) + bounds) or None
    return EinsumDesc(d.name, text, tuple(inputs), d.output, clause)
