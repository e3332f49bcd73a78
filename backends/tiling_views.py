"""Views, broadcasts and constants read by the einsums of a chain, as the tiling problem sees them
(docs/tiling.md, "Views, broadcasts and constants"): a read of a view is a read of the tensor it views
through remapped subscripts (permute: the entries reordered; slice: `start + step·entry`, an index entry
a constant; a reshape that splits dimensions: the entries of each split folded into one affine entry), a
read of a broadcast is a read of its source with the broadcast dimensions left out (a size-1 source
dimension is the constant 0), and a constant is read from no tensor at all (it moves no data). Each view
says how it maps indices (`Op.index_map`); nothing here names a view's class."""

from __future__ import annotations

from collections.abc import Callable

from solar.backends.tiling_problem import EinsumDesc, Unfusable
from solar.ir.einsum_spec import index_ranges, parse_spec, parse_where
from solar.ir.expr import Expr, IndexRef, linear_form
from solar.ir.index_map import NotAffine
from solar.ir.ops import Value


def _shape(v: Value, values: dict[str, int]) -> tuple[int, ...]:
    assert v.type is not None
    return v.type.concrete_shape(values)


def resolve(v: Value, term: tuple[Expr, ...], values: dict[str, int]) -> tuple[Value, tuple[Expr, ...]] | None:
    """The tensor a read of `v` through `term` reads, past views and broadcasts, and its entries there;
    None for a constant (no data)."""
    entries = list(term)
    while True:
        owner = v.owner
        if owner is None or not owner.is_view:
            return v, tuple(entries)
        if not owner.operands:
            return None  # a constant: no data
        try:
            index_map = owner.index_map(values)
            if index_map is None:
                return v, tuple(entries)
            src = owner.operands[0]
            entries = index_map.source_entries(entries, _shape(v, values), _shape(src, values))
        except NotAffine as err:
            raise Unfusable(str(err)) from err
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
    where = parse_where(d.where, spec.indices) if d.where else []
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
