"""`--emit=timeloop`: one Timeloop problem (YAML, format version 0.4) per einsum (docs/exports.md).

    problem:
      version: 0.4
      shape:
        name: conv2d
        dimensions: [N, K, P, Q, C, R, S]
        coefficients: [{name: Pcoef, default: 2}, ...]
        data_spaces:
        - {name: X, projection: [[[N]], [[C]], [[P, Pcoef], [R]], ...]}
        - {name: Y, projection: [[[N]], [[K]], [[P]], [[Q]]], read_write: true}
      instance: {N: 1, K: 32, ...}

Each einsum index is a dimension (its capital, as in the NVIDIA SOLAR export); each operand and the result
are data spaces whose projections are the subscripts in sum-of-products form: a sliding window `(2p+r-1)`
is `[[P, Pcoef], [R]]` with the coefficient declared in `coefficients`. Timeloop projections have no
constant term, so padding offsets (`-1`) are dropped, and its iteration spaces are boxes, so a `where`
constraint (a causal mask) is not expressed: the problem covers the bounding box, and a comment on the
document says so.
"""

from __future__ import annotations

import os
from typing import Any

import yaml

from solar.backends.einsum_graph import ExportError, einsum_graph
from solar.backends.export_nvsolar import capital_ranks
from solar.ir.einsum_spec import bind_where, index_ranges, parse_spec, parse_where
from solar.ir.expr import Expr, IndexRef, linear_form
from solar.ir.expr_values import evaluate_int
from solar.ir.ops import EinsumOp, ModuleOp
from solar.ir.outputs import write_text_atomic


def timeloop_problems(module: ModuleOp) -> list[tuple[str, str]]:
    """(name, problem document) for every einsum of every function; the name is the einsum's symbol, after
    its function's name when the module has several."""
    out: list[tuple[str, str]] = []
    for func in module.funcs:
        graph = einsum_graph(module, func.name)
        prefix = f"{func.name}." if len(module.funcs) > 1 else ""
        for node in graph.nodes:
            if isinstance(node.op, EinsumOp):
                out.append((prefix + node.id, problem_yaml(node.op, graph.values)))
    return out


# Longer than most: one Timeloop problem's sections (dimensions, instance, data spaces and their projections, notes)
# built from the same spec, shapes and bound where-clause.
def problem(op: EinsumOp, values: dict[str, int]) -> tuple[dict[str, Any], list[str]]:
    """The problem as a dictionary, and notes on what it leaves out."""
    spec = parse_spec(op.spec)
    shapes = [b.value.type.shape for b in op.inputs if b.value.type is not None] + [op.outputs[0].type.shape]
    # The export is at concrete sizes: a where-clause's size parameters (`j<=CONTEXT`) take their values.
    clause = bind_where(op.where, spec.indices, values) if op.where else None
    where = parse_where(clause, spec.indices) if clause else None
    ranges = index_ranges(spec, shapes, where)
    ranks = capital_ranks(list(spec.indices))
    coefficients: dict[str, int] = {}
    notes: list[str] = []

    def coefficient(letter: str, value: int) -> str:
        base = f"{ranks[letter]}coef"
        name, n = base, 1
        while name in coefficients and coefficients[name] != value:
            n += 1
            name = f"{base}{n}"
        coefficients[name] = value
        return name

    def projection(term: tuple[Expr, ...]) -> list[list[list[str]]]:
        dims = []
        for entry in term:
            if isinstance(entry, IndexRef):
                dims.append([[ranks[entry.name]]])
                continue
            form = linear_form(entry)
            if form is None:
                raise ExportError(f"@{op.symbol}: subscript entry {entry} is not affine")
            coeffs, const = form
            if const and coeffs:
                notes.append(f"the constant offset {const:+d} of a window is dropped (Timeloop projections "
                             "have no constant term)")
            if not coeffs:
                notes.append(f"the constant subscript ({const}) of a size-1 dimension is left out of the projection")
                continue
            products = []
            for name, c in coeffs:
                letter = name[1:]
                if c <= 0:
                    raise ExportError(f"@{op.symbol}: the coefficient {c} of index {letter} is not positive; "
                                      "Timeloop projections are sums of positive products")
                products.append([ranks[letter]] if c == 1 else [ranks[letter], coefficient(letter, c)])
            dims.append(products)
        return dims

    names: list[str] = []
    for name in [b.name for b in op.inputs] + [op.outputs[0].name]:
        unique, n = name, 0
        while unique in names:
            n += 1
            unique = f"{name}_{n}"
        names.append(unique)
    spaces: list[dict[str, Any]] = []
    for name, term in zip(names[:-1], spec.inputs, strict=True):
        spaces.append({"name": name, "projection": projection(term)})
    spaces.append({"name": names[-1], "projection": projection(spec.output), "read_write": True})
    if clause:
        notes.append(f"where \"{clause}\" is not expressed: the problem is its bounding box")
    shape: dict[str, Any] = {"name": op.symbol, "dimensions": [ranks[c] for c in spec.indices]}
    if coefficients:
        shape["coefficients"] = [{"name": k, "default": v} for k, v in coefficients.items()]
    shape["data_spaces"] = spaces
    instance = {ranks[c]: _size(ranges[c], values) for c in spec.indices}
    instance.update(coefficients)
    return {"problem": {"version": 0.4, "shape": shape, "instance": instance}}, list(dict.fromkeys(notes))


def _size(dim: Any, values: dict[str, int]) -> int:
    return dim if isinstance(dim, int) else evaluate_int(dim, values)


def problem_yaml(op: EinsumOp, values: dict[str, int]) -> str:
    doc, notes = problem(op, values)
    header = f"# Timeloop problem for @{op.symbol} \"{op.spec}\" (solar-opt --emit=timeloop)\n"
    header += "".join(f"# note: {n}\n" for n in notes)
    return header + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=120)


def emit_timeloop(module: ModuleOp, directory: str | None = None) -> str:
    """All problems as one YAML stream; with `directory`, one `<einsum>.yaml` file each there instead (written
    atomically), and the list of files."""
    problems = timeloop_problems(module)
    if directory is None:
        return "---\n".join(text for _, text in problems)
    names = [name.casefold() for name, _ in problems]  # case too: some file systems ignore it
    for name, _ in problems:
        if names.count(name.casefold()) > 1:
            raise ExportError(f"two einsums would both be written to '{name}.yaml' (a function's name and "
                              "an einsum's name run together): rename one of them")
    os.makedirs(directory, exist_ok=True)
    written = []
    for name, text in problems:
        path = os.path.join(directory, f"{name}.yaml")
        write_text_atomic(path, text, "the Timeloop problem")
        written.append(path)
    return "".join(f"// wrote {p}\n" for p in written)
