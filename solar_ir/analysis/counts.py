"""Exact counts of an einsum (or of a kernel that stays a loop nest): iteration points, MACs, FLOPs by unit
and by operation kind, bytes read per operand and written.

Conventions (docs/counts.md):
- every arithmetic operator, comparison and scalar function in a body counts one operation of its kind
  (see `solar.ir.scalar_funcs`) per iteration point; subscripts are address arithmetic and count nothing;
  casts (`cast`) and `and`/`or`/`not` (`logic`) are counted apart and are not FLOPs;
- a reduction costs one operation of its kind per iteration point; an einsum's epilogue one evaluation per
  result element reached;
- a body `Out += A * B` (two tensor reads, casts allowed) that reduces (an index absent from the result, or
  several points reaching one result element) is a contraction: MACs = points and its 2·MACs FLOPs are
  tensor-core eligible; all other work is vector work;
- bytes: each tensor's footprint (distinct elements read, the union over its accesses, padding halos
  excluded) times its element size; the result's elements written times its element size; a kernel's locals
  move no bytes;
- an op inside solar.for loops is counted over every run, summed over the loops' iterations
  (`solar.ir.analysis.op_counts` gives them with the number of runs, and the counts of one run).

A `Counts` is plain data: per tensor read, its elements and bytes (`elements_read`, `bytes_read`, by the
name it is bound to), per output the same (`output_elements`, `output_bytes`), and the totals.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import islpy as isl

from solar.ir import attr_names
from solar.ir.analysis import subscript_facts
from solar.ir.analysis.formula import Formula, Number, is_symbolic
from solar.ir.analysis.isl_model import (
    KernelModel,
    cached_map,
    cached_set,
    dim_names,
    dim_text,
    evaluate,
    isl_expr,
    isl_name,
)
from solar.ir.analysis.separable_counts import SeparableCounts
from solar.ir.einsum_spec import index_ranges, parse_spec, parse_where, where_sizes
from solar.ir.expr import Access, Binary, Call, Cast, Expr, IndexRef, NameRef, Unary, constant_value, walk
from solar.ir.expr_values import evaluate_int
from solar.ir.expr_visitor import ExprVisitor
from solar.ir.ops import EinsumOp, Value
from solar.ir.scalar_funcs import BINARY_FLOP_KIND, FUNCTIONS
from solar.ir.types import Dim, TensorType

NOT_FLOPS = frozenset({"cast", "logic"})


@dataclass
class Counts:
    points: int = 0
    macs: int = 0
    flops_tensor: int = 0
    flops_vector: int = 0
    ops: Counter[str] = field(default_factory=Counter)
    bytes_read: dict[str, int] = field(default_factory=dict)  # by operand name
    bytes_written: int = 0  # all outputs together
    elements_read: dict[str, int] = field(default_factory=dict)  # by operand name
    output_elements: dict[str, int] = field(default_factory=dict)  # by output name: elements written
    output_bytes: dict[str, int] = field(default_factory=dict)  # by output name: bytes written

    @property
    def flops(self) -> int:
        return self.flops_tensor + self.flops_vector

    def copy(self) -> Counts:
        return self._map(lambda v: v)

    def scaled(self, n: int) -> Counts:
        """The counts of `n` runs that each count these."""
        if n == 1:
            return self
        return self._map(lambda v: v * n)

    def per_run(self, runs: int) -> Counts:
        """The counts of one of `runs` runs that these sum: exact when every run counts the same (a kernel
        that uses a solar.for index may not: then the mean). A kernel inside a zero-trip loop never runs
        (runs == 0, every count 0): its counts are these."""
        symbolic = isinstance(runs, Formula)
        if not symbolic and runs <= 1:
            return self
        out = self._map(lambda v: _divide(v, runs))
        # An output's bytes are its elements' share times their size, as the bytes of one run.
        out.output_bytes = {k: _divide(self.output_bytes[k], runs) if symbolic or isinstance(n, Formula)
                            else _divide(n, runs) * (self.output_bytes[k] // n) if n else 0
                            for k, n in self.output_elements.items()}
        return out

    def _map(self, fn: Callable[[int], int]) -> Counts:
        return Counts(fn(self.points), fn(self.macs), fn(self.flops_tensor), fn(self.flops_vector),
                      Counter({k: fn(v) for k, v in self.ops.items()}),
                      {k: fn(v) for k, v in self.bytes_read.items()}, fn(self.bytes_written),
                      {k: fn(v) for k, v in self.elements_read.items()},
                      {k: fn(v) for k, v in self.output_elements.items()},
                      {k: fn(v) for k, v in self.output_bytes.items()})

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
        self.bytes_written += other.bytes_written
        for mine, theirs in ((self.bytes_read, other.bytes_read), (self.elements_read, other.elements_read),
                             (self.output_elements, other.output_elements), (self.output_bytes, other.output_bytes)):
            for k, v in theirs.items():
                mine[k] = mine.get(k, 0) + v
        return self


def _divide(total: int, runs: int) -> int:
    """One run's share of a count: exact when it divides, else the mean (a float); a formula's share is the
    exact quotient (a whole number where every run counts the same)."""
    if isinstance(total, Formula) or isinstance(runs, Formula):
        return total / runs
    return total // runs if total % runs == 0 else total / runs  # type: ignore[return-value]


def expression_ops(expr: Expr, params: Collection[str] = ()) -> Counter[str]:
    """Operations one evaluation of `expr` performs, by kind. The subscripts of tensor reads are address
    arithmetic, not operations: `X[2 * %p + %r]` costs nothing beyond the read. A part made of literals and
    the size parameters `params` alone (`rsqrt(cast<f32>(D))`, attention's scale for a symbolic head size) is
    a constant of the program, computed once, not per evaluation: it costs nothing either."""
    ops: Counter[str] = Counter()
    stack = [expr]
    while stack:  # a walk, not recursion: an expression may nest as deep as solar.ir.limits allows
        node = stack.pop()
        if _constant(node, params):
            continue
        stack.extend(_OPERATIONS.visit(node, ops))
    return ops


def _constant(expr: Expr, params: Collection[str]) -> bool:
    return all(not isinstance(node, (Access, IndexRef)) and (not isinstance(node, NameRef) or node.name in params)
               for node in walk(expr))


class _Operations(ExprVisitor[tuple[Expr, ...]]):
    """Adds the operations of one node, by kind, to a counter, and gives the nodes whose operations count:
    its operands (leaves and tensor reads have none, a read's subscripts being addresses)."""

    def visit_binary(self, e: Binary, ops: Counter[str]) -> tuple[Expr, ...]:
        ops[BINARY_FLOP_KIND[e.op]] += 1
        return e.children()

    def visit_unary(self, e: Unary, ops: Counter[str]) -> tuple[Expr, ...]:
        ops["add" if e.op == "-" else "logic"] += 1
        return e.children()

    def visit_call(self, e: Call, ops: Counter[str]) -> tuple[Expr, ...]:
        fn = FUNCTIONS.get(e.func)
        ops[fn.flop_kind if fn is not None else e.func] += 1
        return e.children()

    def visit_cast(self, e: Cast, ops: Counter[str]) -> tuple[Expr, ...]:
        ops["cast"] += 1
        return e.children()

    def visit_other(self, e: Expr, ops: Counter[str]) -> tuple[Expr, ...]:
        return ()  # literals, indices, names and tensor reads


_OPERATIONS = _Operations()


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


def is_block_scaled_contraction(value: Expr, reduction: str | None, reduced: bool) -> bool:
    """`(A * SA) * (B * SB)` reduced with add: two operands each times its block's scale (through casts), as a
    block-scaled MMA (NVFP4, MXFP4) runs it; an einsum says so with `block_scaled = true` (--quantize)."""
    def scaled(e: Expr) -> Expr:
        while isinstance(e, Cast):
            e = e.operand
        return e

    if reduction != "add" or not reduced or not (isinstance(value, Binary) and value.op == "*"):
        return False
    sides = [scaled(value.lhs), scaled(value.rhs)]
    return all(isinstance(s, Binary) and s.op == "*" and is_contraction(s, "add", True) for s in sides)


@dataclass
class EinsumModel:
    domain: isl.Set
    reads: list[isl.Map]  # per operand, image clipped to the operand's box; operands bound to one value
    write: isl.Map  # share a range space (T<k> of the first), so that their footprints can be united
    write_unclipped: isl.Map  # the result's subscripts as written, for the bounds check of output windows
    output_box: isl.Set  # every element of the result


def einsum_model(op: EinsumOp, size_params: list[str]) -> EinsumModel:
    spec = parse_spec(op.spec)
    where = parse_where(op.where, spec.indices) if op.where is not None else []
    shapes = [_type(b.value).shape for b in op.inputs] + [op.outputs[0].type.shape]
    ranges = index_ranges(spec, shapes, where)
    names = {p: isl_name(p) for p in size_params}
    names.update({"%" + i: "i_" + i for i in spec.indices})
    prefix = f"[{', '.join(names[p] for p in size_params)}] -> " if size_params else ""
    dims = ", ".join(names["%" + i] for i in spec.indices)
    cons = [f"0 <= {names['%' + i]} < {dim_text(ranges[i], names)}" for i in spec.indices]
    cons += [isl_expr(c, names) for c in where]
    cons += [f"{names[p]} >= 1" for p in size_params]
    domain = cached_set(f"{prefix}{{ E[{dims}] : {' and '.join(cons)} }}")

    def unclipped(term: tuple[Expr, ...], tensor: str) -> isl.Map:
        entries = ", ".join(isl_expr(e, names) for e in term)
        return cached_map(f"{prefix}{{ E[{dims}] -> {tensor}[{entries}] }}").intersect_domain(domain)

    def rel(term: tuple[Expr, ...], shape: tuple, tensor: str) -> isl.Map:
        box = " and ".join(f"0 <= d{k} < {dim_text(d, names)}" for k, d in enumerate(shape)) or "true"
        target = cached_set(f"{prefix}{{ {tensor}[{', '.join(f'd{k}' for k in range(len(shape)))}] : {box} }}")
        return unclipped(term, tensor).intersect_range(target)

    first: dict[int, int] = {}  # id of a value -> the first operand bound to it
    tuples = [f"T{first.setdefault(id(b.value), k)}" for k, b in enumerate(op.inputs)]
    reads = [rel(term, shape, t) for term, shape, t in zip(spec.inputs, shapes[:-1], tuples, strict=True)]
    out_shape = shapes[-1]
    box = " and ".join(f"0 <= d{k} < {dim_text(d, names)}" for k, d in enumerate(out_shape)) or "true"
    output_box = cached_set(f"{prefix}{{ O[{', '.join(f'd{k}' for k in range(len(out_shape)))}] : {box} }}")
    return EinsumModel(domain, reads, rel(spec.output, shapes[-1], "O"), unclipped(spec.output, "O"), output_box)


def einsum_counts(op: EinsumOp, size_params: list[str], values: dict[str, int]) -> Counts:
    """Counts of one einsum at the given parameter values (size parameters it does not use may be absent).
    Einsums equal in everything that counts (subscripts, where-clause, body, operand types and which
    operands share a value) share one computation."""
    mentioned = _mentioned(op)  # once, not once per size parameter
    used = tuple(p for p in size_params if p in mentioned)
    sharing = tuple(next(k for k, c in enumerate(op.inputs) if c.value is b.value) for b in op.inputs)
    # Size parameters in the body are constants, unless an operand has that name (then it is its element).
    named = {n.name for s in op.body for n in walk(s.value) if isinstance(n, NameRef)}
    constants = frozenset((named & set(size_params)) - {b.name for b in op.inputs})
    key = (op.spec, op.where, tuple((s.target, s.op, s.value) for s in op.body),
           tuple(_type(b.value) for b in op.inputs), op.outputs[0].type, sharing,
           used, tuple(values.get(p) for p in used), constants, op.attrs.get(attr_names.BLOCK_SCALED) is True,
           op.attrs.get(attr_names.ZERO_FILLED) is True)
    counts = _einsum_counts(key, op, used, values, constants)
    output = op.outputs[0].name
    return Counts(counts.points, counts.macs, counts.flops_tensor, counts.flops_vector, Counter(counts.ops),
                  {op.inputs[int(k)].name: v for k, v in counts.bytes_read.items()}, counts.bytes_written,
                  {op.inputs[int(k)].name: v for k, v in counts.elements_read.items()},
                  {output: counts.output_elements["0"]}, {output: counts.bytes_written})


_CACHE: dict[tuple[Any, ...], Counts] = {}  # see einsum_counts; never mutated once stored


def _einsum_counts(key: tuple[Any, ...], op: EinsumOp, used: tuple[str, ...], values: dict[str, int],
                   constants: frozenset[str]) -> Counts:
    """Counts with `bytes_read` and `elements_read` keyed by the position of the first operand bound to each
    value, and the output's elements under "0"."""
    if key in _CACHE:
        return _CACHE[key]
    sizes = box_sizes(op, used, values) or isl_sizes(op, used, values)
    points = sizes.points
    first = op.body[0]
    counts = Counts(points=points)
    out_elems = sizes.output_elements
    body_ops = expression_ops(first.value, constants)
    if first.reduction is not None:
        body_ops[first.reduction] += 1
    reduced = sizes.reduced
    # key[-2]: the einsum is marked block-scaled (--quantize W4A4)
    if is_contraction(first.value, first.reduction, reduced) or (
            key[-2] and is_block_scaled_contraction(first.value, first.reduction, reduced)):
        counts.macs = points
        counts.flops_tensor = 2 * points
    else:
        counts.flops_vector = flops_of(body_ops) * points
    counts.ops.update({k: v * points for k, v in body_ops.items()})
    if len(op.body) > 1:
        epi = expression_ops(op.body[1].value, constants)
        counts.flops_vector += flops_of(epi) * out_elems
        counts.ops.update({k: v * out_elems for k, v in epi.items()})
    for k, elements in sizes.elements_read.items():
        counts.elements_read[str(k)] = elements
        counts.bytes_read[str(k)] = _type(op.inputs[k].value).dtype.bytes_of(elements)
    if key[-1]:  # the kernel zero-filled the result before writing part of it: every element is written
        out_elems = sizes.output_box
    counts.output_elements["0"] = out_elems
    counts.bytes_written = op.outputs[0].type.dtype.bytes_of(out_elems)
    if len(_CACHE) < 65536:
        _CACHE[key] = counts
    return counts


@dataclass(frozen=True)
class EinsumSizes:
    """What an einsum's counts take from its iteration space: its points, the distinct elements read of each
    value (by the position of the first operand bound to it), the result's elements written and all of
    them, and whether it reduces (an index absent from the result, or several points reaching one result
    element, as a transposed convolution's output window does)."""

    points: int
    elements_read: dict[int, int]
    output_elements: int
    output_box: int
    reduced: bool


def isl_sizes(op: EinsumOp, used: tuple[str, ...], values: dict[str, int]) -> EinsumSizes:
    """The sizes from the einsum's ISL model: any subscripts, where-clauses, operands sharing a value."""
    model = einsum_model(op, list(used))
    first = op.body[0]
    # Per distinct value, the elements all its operands touch (their union).
    footprints: dict[str, isl.Set] = {}
    for read in model.reads:
        rng = read.range()
        name = rng.get_tuple_name()
        footprints[name] = footprints[name].union(rng) if name in footprints else rng
    return EinsumSizes(_value(model.domain.card(), values),
                       {int(name[1:]): _value(fp.card(), values) for name, fp in footprints.items()},
                       _value(model.write.range().card(), values), _value(model.output_box.card(), values),
                       bool(parse_spec(op.spec).reduced) or (first.reduction is not None
                                                            and not model.write.is_injective()))


def box_sizes(op: EinsumOp, used: tuple[str, ...], values: Mapping[str, Number]) -> EinsumSizes | None:
    """The sizes in closed form where the iteration space is a box and every operand reads a box of it (no
    where-clause; each subscript an index, distinct within its operand, or a constant; each operand its own
    value; sizes given as numbers), or None: most einsums of a network (element-wise, normalization,
    reductions), whose ISL models dominated pricing it. The domain is the product of the index ranges (and
    empty unless every size it mentions is at least 1, as the ISL model's context says); an operand's
    footprint is, along each dimension, the range of its index clipped to the dimension, or its constant
    when that is inside it, and nothing when the domain is empty. `isl_sizes` gives the same figures
    (tests/unit/test_box_sizes.py)."""
    if op.where is not None or any(not isinstance(values.get(p), int) for p in used):
        return None  # (a formula, or no value: the ISL model counts, or says what is missing)
    if len({id(b.value) for b in op.inputs}) != len(op.inputs):
        return None
    spec = parse_spec(op.spec)
    shapes = [_type(b.value).shape for b in op.inputs] + [op.outputs[0].type.shape]
    terms = [*spec.inputs, spec.output]
    for term in terms:
        letters = [e.name for e in term if isinstance(e, IndexRef)]
        if len(set(letters)) != len(letters) or any(not isinstance(e, IndexRef) and constant_value(e) is None
                                                    for e in term):
            return None
    env: dict[str, int] = {p: values[p] for p in used}  # type: ignore[misc]
    try:
        extent = {i: _size(r, env) for i, r in index_ranges(spec, shapes, []).items()}
        dims = [[_size(d, env) for d in shape] for shape in shapes]
    except (KeyError, ValueError):  # a size the values do not give: the ISL model says why
        return None
    empty = any(env[p] < 1 for p in used) or any(n <= 0 for n in extent.values())

    def box(term: tuple[Expr, ...], shape: list[int]) -> int:
        n = 1
        for entry, dim in zip(term, shape, strict=True):
            if isinstance(entry, IndexRef):
                n *= max(0, min(extent[entry.name], dim))
            else:
                n *= 1 if 0 <= (constant_value(entry) or 0) < dim else 0
        return n

    points = 0 if empty else math.prod(extent[i] for i in spec.indices)
    reads = {k: 0 if empty else box(term, dims[k]) for k, term in enumerate(spec.inputs)}
    # Every index in the result, each once: no two points write one element, so only an absent index reduces.
    return EinsumSizes(points, reads, 0 if empty else box(spec.output, dims[-1]),
                       math.prod(max(0, d) for d in dims[-1]), bool(spec.reduced))


def _size(dim: Dim, env: dict[str, int]) -> int:
    return dim if isinstance(dim, int) else evaluate_int(dim, env)


def _type(value: Value) -> TensorType:
    assert value.type is not None, f"value %{value.name} has no type"
    return value.type


def kernel_counts(model: KernelModel, values: dict[str, int]) -> Counts:
    """Counts of a kernel that stays a loop nest, statement by statement; locals are on chip (no bytes).
    A kernel inside solar.for loops whose indices it uses is counted over all their iterations (one run
    of the kernel per iteration: points, FLOPs and per-run footprints summed). Counted once per kernel
    structure and values (the model's memo); each caller gets its own copy."""
    if is_symbolic(values):
        return _kernel_counts(model, values)
    return model.remember(("counts", tuple(sorted(values.items()))), lambda: _kernel_counts(model, values)).copy()


def _kernel_counts(model: KernelModel, values: dict[str, int]) -> Counts:

    def total(poly: isl.PwQPolynomial) -> int:
        return _value(sum_over(poly, model.loop_params, model.context), values)

    fixed = not model.loop_params and not is_symbolic(values)

    def size(points: isl.Set) -> int:
        """How many points: at the sizes' values where they are numbers (barvinok counts a set with fixed
        parameters a few times faster than it finds the formula in them; the number is the same)."""
        if fixed:
            space = points.get_space()
            for k in range(space.dim(isl.dim_type.param)):
                name = space.get_dim_name(isl.dim_type.param, k)
                if name in values:
                    points = points.fix_val(isl.dim_type.param, k, isl.Val(values[name]))
        return total(points.card())

    separable = SeparableCounts(model, values) if fixed else None
    counts = Counts()
    for s in model.statements:
        points = separable.points(s) if separable is not None else None
        points = size(s.domain) if points is None else points
        counts.points += points
        target = s.stmt.target
        reduced = s.stmt.reduction is not None and (
            len(s.indices) > len({i.name for e in target.indices for i in walk(e) if isinstance(i, IndexRef)})
            or not (subscript_facts.injective(target, s.loops) or s.write.is_injective()))
        ops = expression_ops(s.stmt.value, values.keys())  # kernels read tensors as accesses: names are sizes
        if s.stmt.reduction is not None:
            ops[s.stmt.reduction] += 1
        if is_contraction(s.stmt.value, s.stmt.reduction, reduced):
            counts.macs += points
            counts.flops_tensor += 2 * points
        else:
            counts.flops_vector += flops_of(ops) * points
        counts.ops.update({k: v * points for k, v in ops.items()})
    for b in model.kernel.inputs:
        read = separable.footprint(b.name) if separable is not None else None
        fp = model.footprint(b.name) if read is None else None
        if (read is not None or fp is not None) and b.value.type is not None:
            counts.elements_read[b.name] = size(fp) if read is None else read
            counts.bytes_read[b.name] = b.value.type.dtype.bytes_of(counts.elements_read[b.name])
    for d in model.kernel.outputs:
        written = separable.footprint(d.name, written=True) if separable is not None else None
        fp = model.footprint(d.name, written=True) if written is None else None
        counts.output_elements[d.name] = written if written is not None else size(fp) if fp is not None else 0
        counts.output_bytes[d.name] = model.tensors[d.name].dtype.bytes_of(counts.output_elements[d.name])
        counts.bytes_written += counts.output_bytes[d.name]
    return counts


def sum_over(poly: isl.PwQPolynomial, params: list[str], context: isl.Set) -> isl.PwQPolynomial:
    """`poly` summed over every value the named parameters take in `context` (solar.for indices)."""
    if not params:
        return poly
    poly = poly.intersect_params(context)
    for name in params:
        k = poly.get_domain_space().find_dim_by_name(isl.dim_type.param, name)
        if k >= 0:
            poly = poly.move_dims(isl.dim_type.in_, 0, isl.dim_type.param, k, 1).sum()
    return poly


def mentioned_params(op: EinsumOp) -> set[str]:
    """The size parameters an einsum's types mention."""
    return _mentioned(op)


def _mentioned(op: EinsumOp) -> set[str]:
    spec = parse_spec(op.spec)
    names = where_sizes(parse_where(op.where, spec.indices)) if op.where is not None else set()
    for t in [*(b.value.type for b in op.inputs), op.outputs[0].type]:
        if t is not None:
            for d in t.shape:
                if isinstance(d, Expr):
                    names |= dim_names(d)
    return names


def _value(poly: isl.PwQPolynomial, values: dict[str, int]) -> int:
    result = evaluate(poly, values)
    if result is None:
        raise ValueError(f"the count {poly} needs values for its size parameters")
    return result
