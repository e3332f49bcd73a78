"""Exact counts of an einsum (or of a kernel that stays a loop nest): iteration points, MACs, FLOPs by unit
and by operation kind, bytes read per operand and written.

Conventions (docs/counts.md):
- every arithmetic operator, comparison and scalar function in a body counts one operation of its kind
  (see `solar.ir.scalar_funcs`) per iteration point; casts are counted apart and are not FLOPs;
- a reduction costs one operation of its kind per iteration point;
- an einsum whose body is `Out += A * B` (casts allowed) with at least one reduced index is a contraction:
  MACs = points and its 2·MACs FLOPs are tensor-core eligible; all other work is vector work;
- bytes: each operand's footprint (distinct elements read, padding halos excluded) times its element
  size; the result's footprint times its element size.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import islpy as isl

from solar.ir.einsum_spec import index_ranges, parse_spec, parse_where
from solar.ir.expr import Access, Binary, Call, Cast, Expr, IndexRef, NameRef, Unary, walk
from solar.ir.ops import EinsumOp
from solar.ir.scalar_funcs import BINARY_FLOP_KIND, FUNCTIONS
from solar.passes.analysis.isl_model import KernelModel, dim_text, evaluate, isl_expr, isl_name

NOT_FLOPS = frozenset({"cast", "logic"})


@dataclass
class Counts:
    points: int = 0
    macs: int = 0
    flops_tensor: int = 0
    flops_vector: int = 0
    ops: Counter[str] = field(default_factory=Counter)
    bytes_read: dict[str, int] = field(default_factory=dict)
    bytes_written: int = 0

    @property
    def flops(self) -> int:
        return self.flops_tensor + self.flops_vector

    def as_attr(self) -> dict[str, Any]:
        return {
            "points": self.points,
            "macs": self.macs,
            "flops": {"tensor": self.flops_tensor, "vector": self.flops_vector},
            "ops": dict(sorted(self.ops.items())),
            "bytes": {"read": dict(self.bytes_read), "written": self.bytes_written},
        }

    def __iadd__(self, other: Counts) -> Counts:
        self.points += other.points
        self.macs += other.macs
        self.flops_tensor += other.flops_tensor
        self.flops_vector += other.flops_vector
        self.ops.update(other.ops)
        for k, v in other.bytes_read.items():
            self.bytes_read[k] = self.bytes_read.get(k, 0) + v
        self.bytes_written += other.bytes_written
        return self


def expression_ops(expr: Expr) -> Counter[str]:
    """Operations one evaluation of `expr` performs, by kind."""
    ops: Counter[str] = Counter()
    for node in walk(expr):
        if isinstance(node, Binary):
            ops[BINARY_FLOP_KIND[node.op]] += 1
        elif isinstance(node, Unary):
            ops["add" if node.op == "-" else "logic"] += 1
        elif isinstance(node, Call):
            fn = FUNCTIONS.get(node.func)
            ops[fn.flop_kind if fn is not None else node.func] += 1
        elif isinstance(node, Cast):
            ops["cast"] += 1
    return ops


def flops_of(ops: Counter[str]) -> int:
    return sum(n for kind, n in ops.items() if kind not in NOT_FLOPS)


def is_contraction(value: Expr, reduction: str | None, reduced: bool) -> bool:
    """`A * B` of two operand elements (through casts) reduced with add over at least one index."""
    if reduction != "add" or not reduced:
        return False
    if not (isinstance(value, Binary) and value.op == "*"):
        return False

    def operand(e: Expr) -> bool:
        while isinstance(e, Cast):
            e = e.operand
        return isinstance(e, NameRef | Access)

    return operand(value.lhs) and operand(value.rhs)


@dataclass
class EinsumModel:
    domain: isl.Set
    reads: list[isl.Map]  # per operand, image clipped to the operand's box
    write: isl.Map


def einsum_model(op: EinsumOp, size_params: list[str]) -> EinsumModel:
    spec = parse_spec(op.spec)
    where = parse_where(op.where) if op.where is not None else []
    shapes = [b.value.type.shape for b in op.inputs if b.value.type is not None] + [op.outputs[0].type.shape]
    ranges = index_ranges(spec, shapes, where)
    names = {p: isl_name(p) for p in size_params}
    names.update({"%" + i: "i_" + i for i in spec.indices})
    prefix = f"[{', '.join(names[p] for p in size_params)}] -> " if size_params else ""
    dims = ", ".join(names["%" + i] for i in spec.indices)
    cons = [f"0 <= {names['%' + i]} < {dim_text(ranges[i], names)}" for i in spec.indices]
    cons += [isl_expr(c, names) for c in where]
    cons += [f"{names[p]} >= 1" for p in size_params]
    domain = isl.Set(f"{prefix}{{ E[{dims}] : {' and '.join(cons)} }}")

    def rel(term: tuple[Expr, ...], shape: tuple, tensor: str) -> isl.Map:
        entries = ", ".join(isl_expr(e, names) for e in term)
        box = " and ".join(f"0 <= d{k} < {dim_text(d, names)}" for k, d in enumerate(shape)) or "true"
        target = isl.Set(f"{prefix}{{ {tensor}[{', '.join(f'd{k}' for k in range(len(shape)))}] : {box} }}")
        return isl.Map(f"{prefix}{{ E[{dims}] -> {tensor}[{entries}] }}").intersect_domain(domain).intersect_range(
            target)

    reads = [rel(term, shape, f"T{k}") for k, (term, shape) in enumerate(zip(spec.inputs, shapes, strict=False))]
    return EinsumModel(domain, reads, rel(spec.output, shapes[-1], "O"))


def einsum_counts(op: EinsumOp, size_params: list[str], values: dict[str, int]) -> Counts:
    """Counts of one einsum at the given parameter values (size parameters it does not use may be absent)."""
    used = [p for p in size_params if p in _mentioned(op)]
    model = einsum_model(op, used)
    points = _value(model.domain.card(), values)
    spec = parse_spec(op.spec)
    first = op.body[0]
    counts = Counts(points=points)
    out_elems = _value(model.write.range().card(), values)
    body_ops = expression_ops(first.value)
    if first.reduction is not None:
        body_ops[first.reduction] += 1
    if is_contraction(first.value, first.reduction, bool(spec.reduced)):
        counts.macs = points
        counts.flops_tensor = 2 * points
        counts.ops.update({"mul": points, "add": points})
    else:
        counts.flops_vector = flops_of(body_ops) * points
        counts.ops.update({k: v * points for k, v in body_ops.items()})
    if len(op.body) > 1:
        epi = expression_ops(op.body[1].value)
        counts.flops_vector += flops_of(epi) * out_elems
        counts.ops.update({k: v * out_elems for k, v in epi.items()})
    for binding, read in zip(op.inputs, model.reads, strict=True):
        assert binding.value.type is not None
        n = _value(read.range().card(), values) * binding.value.type.dtype.itemsize
        counts.bytes_read[binding.name] = counts.bytes_read.get(binding.name, 0) + n
    counts.bytes_written = out_elems * op.outputs[0].type.dtype.itemsize
    return counts


def kernel_counts(model: KernelModel, values: dict[str, int]) -> Counts:
    """Counts of a kernel that stays a loop nest, statement by statement; locals are on chip (no bytes)."""
    counts = Counts()
    for s in model.statements:
        points = _value(s.domain.card(), values)
        counts.points += points
        target = s.stmt.target
        reduced = len(s.indices) > len({i.name for e in target.indices for i in walk(e) if isinstance(i, IndexRef)})
        ops = expression_ops(s.stmt.value)
        if s.stmt.reduction is not None:
            ops[s.stmt.reduction] += 1
        if is_contraction(s.stmt.value, s.stmt.reduction, reduced):
            counts.macs += points
            counts.flops_tensor += 2 * points
        else:
            counts.flops_vector += flops_of(ops) * points
        counts.ops.update({k: v * points for k, v in ops.items()})
    outputs = {d.name for d in model.kernel.outputs}
    for b in model.kernel.inputs:
        fp = model.footprint(b.name)
        if fp is not None and b.value.type is not None:
            counts.bytes_read[b.name] = _value(fp.card(), values) * b.value.type.dtype.itemsize
    for name in outputs:
        fp = model.footprint(name, written=True)
        if fp is not None:
            counts.bytes_written += _value(fp.card(), values) * model.tensors[name].dtype.itemsize
    return counts


def _mentioned(op: EinsumOp) -> set[str]:
    names: set[str] = set()
    for t in [*(b.value.type for b in op.inputs), op.outputs[0].type]:
        if t is not None:
            for d in t.shape:
                if isinstance(d, Expr):
                    names.update(n.name for n in walk(d) if isinstance(n, NameRef))
    return names


def _value(poly: isl.PwQPolynomial, values: dict[str, int]) -> int:
    result = evaluate(poly, values)
    if result is None:
        raise ValueError(f"the count {poly} needs values for its size parameters")
    return result


def index_letters(expr: Expr) -> set[str]:
    return {e.name for e in walk(expr) if isinstance(e, IndexRef)}
