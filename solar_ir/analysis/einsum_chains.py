"""Chains of contractions across `solar.einsum` ops, merged into one tensor network (for --reorder-einsum).

A *linear* einsum is one whose result is a product of its operands (each read once) times a constant,
summed over the indices absent from the result: `Y += A * B`, `Y = A * B * 0.5`, optionally followed by an
epilogue that scales by a constant (`Y = Y * 0.125`). A chain is a tree of linear einsums in one block, each
result read once, by the next einsum of the chain, directly or through pure relabelings: `solar.permute`,
and a `solar.reshape` that only splits or merges dimensions. Such a tree computes one tensor network: the
product of its leaf tensors, summed over every index that is not the root's, whatever the association.

Indices of the network are *atoms*: a dimension that a reshape splits becomes several atoms, found lazily
(an atom can be refined into parts when a reshape further down splits it). A dimension of static size 1
has no atom (it is a reshape away from being absent).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from solar.ir import expr as ex
from solar.ir.einsum_spec import SpecError, index_ranges, parse_spec
from solar.ir.expr import Expr, format_expr
from solar.ir.expr_values import evaluate_int
from solar.ir.expr_visitor import ExprVisitor
from solar.ir.index_map import NotAffine, Permutation, Regroup
from solar.ir.ops import EinsumOp, Op, Value
from solar.ir.types import Dim, TensorType

from .units import Uses


def relabel_map(op: Op | None) -> Permutation | Regroup | None:
    """The index map of a view that only relabels its operand's indices (a permutation, a split or merge of
    dimensions: `Op.index_map`), which a chain follows through; None for any other op."""
    if op is None or not op.is_view or not op.operands:
        return None
    try:
        index_map = op.index_map({})
    except NotAffine:
        return None
    return index_map if isinstance(index_map, Permutation | Regroup) else None


class NotLinear(Exception):
    """Why an einsum cannot be a link of a chain (the message completes "@name ...")."""


@dataclass(frozen=True)
class LinearEinsum:
    """An einsum that is a scaled product of its operands summed over its reduced indices."""

    op: EinsumOp
    terms: tuple[str, ...]  # one subscript string (one letter per dim) per operand
    output: str
    factor: float
    ranges: dict[str, Dim]


def linear_einsum(op: EinsumOp, values: dict[str, int]) -> LinearEinsum:
    """The einsum as a tensor-network node, or NotLinear saying why it is not one."""
    if len(op.outputs) != 1:
        raise NotLinear("has several results")
    if op.where is not None:
        raise NotLinear(f"restricts its iteration space (where \"{op.where}\"), so it is not a plain product")
    try:
        spec = parse_spec(op.spec)
    except SpecError as err:
        raise NotLinear(str(err)) from None
    terms: list[str] = []
    for term in [*spec.inputs, spec.output]:
        if not all(isinstance(e, ex.IndexRef) for e in term):
            raise NotLinear(f"has an affine window in its subscripts \"{op.spec}\" (a convolution is not a "
                            "tensor network)")
        letters = "".join(e.name for e in term if isinstance(e, ex.IndexRef))
        if len(set(letters)) != len(letters):
            raise NotLinear(f"repeats an index within a term of \"{op.spec}\" (a diagonal)")
        terms.append(letters)
    first = op.body[0]
    if first.op not in ("=", "+="):
        raise NotLinear(f"reduces with {first.reduction}, not a sum")
    if first.op == "=" and spec.reduced:
        raise NotLinear("assigns without a reduction over the indices absent from its result")
    names = [b.name for b in op.inputs]
    factor, used = _Product(set(names)).visit(first.value)
    if sorted(used) != sorted(names):
        missing = [n for n in names if n not in used]
        raise NotLinear(f"does not read its operand {missing[0]} in its product" if missing
                        else "reads an operand twice (not linear)")
    for stmt in op.body[1:]:
        factor *= _scaling(stmt.value, op.outputs[0].name)
    result_dtype = op.outputs[0].type.dtype
    for b in op.inputs:
        if b.value.type is not None and b.value.type.dtype != result_dtype:
            raise NotLinear(f"changes the dtype ({b.name} is {b.value.type.dtype.spelling}, its result "
                            f"{result_dtype.spelling})")
    shapes = [b.value.type.shape for b in op.inputs if b.value.type is not None] + [op.outputs[0].type.shape]
    ranges = index_ranges(spec, shapes)
    return LinearEinsum(op, tuple(terms[:-1]), terms[-1], factor, ranges)


class _Product(ExprVisitor[tuple[float, list[str]]]):
    """A product of operand reads and literals: (the constant factor, the operands read); anything else
    raises `NotLinear`, saying why."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def visit_name_ref(self, e: ex.NameRef) -> tuple[float, list[str]]:
        if e.name not in self.names:
            return self.visit_other(e)
        return 1.0, [e.name]

    def visit_int_lit(self, e: ex.IntLit | ex.FloatLit) -> tuple[float, list[str]]:
        return float(e.value), []

    visit_float_lit = visit_int_lit

    def visit_unary(self, e: ex.Unary) -> tuple[float, list[str]]:
        if e.op != "-":
            return self.visit_other(e)
        f, used = self.visit(e.operand)
        return -f, used

    def visit_binary(self, e: ex.Binary) -> tuple[float, list[str]]:
        if e.op == "*":
            fl, ul = self.visit(e.lhs)
            fr, ur = self.visit(e.rhs)
            return fl * fr, ul + ur
        if e.op == "/" and isinstance(e.rhs, ex.IntLit | ex.FloatLit) and e.rhs.value:
            f, used = self.visit(e.lhs)
            return f / float(e.rhs.value), used
        if e.op in ("+", "-"):
            raise NotLinear(f"computes `{format_expr(e)}`, a sum of terms rather than one product")
        if e.op == "/":
            raise NotLinear(f"divides by `{format_expr(e.rhs)}` (not linear)")
        return self.visit_other(e)

    def visit_call(self, e: ex.Call) -> tuple[float, list[str]]:
        raise NotLinear(f"applies {e.func} (not linear)")

    def visit_cast(self, e: ex.Cast) -> tuple[float, list[str]]:
        raise NotLinear(f"changes the dtype (cast<{e.dtype.spelling}>)")

    def visit_other(self, e: Expr) -> tuple[float, list[str]]:
        raise NotLinear(f"computes `{format_expr(e)}`, which is not a product of its operands")


def _scaling(expr: Expr, result: str) -> float:
    """The constant of an epilogue `Y = Y * c` (or `c * Y`, `Y / c`)."""
    factor, used = _Product({result}).visit(expr)
    if used != [result]:
        raise NotLinear(f"has the epilogue `{format_expr(expr)}`, which is not a scaling by a constant")
    return factor


# ---- atoms: the indices of the merged network -----------------------------------------------------


@dataclass(eq=False)
class Atom:
    size: int
    dim: Dim
    parts: list[Atom] | None = None  # set once refined into smaller atoms
    hint: str = ""  # the einsum letter it came from, to name it alike in the rewritten chain

    def leaves(self) -> list[Atom]:
        if self.parts is None:
            return [self]
        return [leaf for p in self.parts for leaf in p.leaves()]


def expand(atoms: list[Atom]) -> list[Atom]:
    return [leaf for a in atoms for leaf in a.leaves()]


def _fresh(size: int, dim: Dim, hint: str = "") -> list[Atom]:
    return [] if isinstance(dim, int) and dim == 1 else [Atom(size, dim, hint=hint)]


def _split(atoms: list[Atom], targets: list[tuple[int, Dim]]) -> list[list[Atom]] | None:
    """Cuts a run of atoms into consecutive groups of the target sizes, refining an atom where a cut falls
    inside it; None when the sizes do not line up."""
    queue = expand(atoms)
    groups: list[list[Atom]] = []
    for size, dim in targets:
        group: list[Atom] = []
        prod = 1
        while prod < size:
            if not queue:
                return None
            a = queue.pop(0)
            if size % (prod * a.size) == 0:
                group.append(a)
                prod *= a.size
                continue
            need = size // prod
            if size % prod or a.size % need:
                return None
            first = Atom(need, dim if prod == 1 else need)
            rest = Atom(a.size // need, a.size // need)
            a.parts = [first, rest]
            group.append(first)
            prod *= need
            queue.insert(0, rest)
        groups.append(group)
    return groups if not queue else None


def reshape_groups(src: tuple[int, ...], dst: tuple[int, ...]) -> list[tuple[list[int], list[int]]] | None:
    """Pairs runs of source and result dims with equal products, one side of each pair a single dim (a split
    or a merge), ignoring dims of size 1; None when the reshape mixes dimensions otherwise."""
    s = [i for i, n in enumerate(src) if n != 1]
    d = [i for i, n in enumerate(dst) if n != 1]
    groups: list[tuple[list[int], list[int]]] = []
    while s and d:
        gs, gd = [s.pop(0)], [d.pop(0)]
        ps, pd = src[gs[0]], dst[gd[0]]
        while ps != pd:
            if ps < pd and s:
                gs.append(s.pop(0))
                ps *= src[gs[-1]]
            elif pd < ps and d:
                gd.append(d.pop(0))
                pd *= dst[gd[-1]]
            else:
                return None
        if len(gs) > 1 and len(gd) > 1:
            return None
        groups.append((gs, gd))
    return groups if not s and not d else None


# ---- chains ---------------------------------------------------------------------------------------


@dataclass(eq=False)
class Refusal:
    """A link the chain does not cross: `consumer` reads `value`, made by `producer`, for `reason`."""

    consumer: EinsumOp
    producer: Op
    value: Value
    reason: str


@dataclass(eq=False)
class Chain:
    root: EinsumOp
    einsums: list[LinearEinsum] = field(default_factory=list)  # in the order visited (root first)
    relabels: list[Op] = field(default_factory=list)
    leaves: list[tuple[Value, list[list[Atom]], EinsumOp]] = field(default_factory=list)  # with its reader
    output: list[list[Atom]] = field(default_factory=list)
    factor: float = 1.0
    shared: list[Op] = field(default_factory=list)  # ops also read outside the chain (recomputed)
    parent: dict[Op, EinsumOp] = field(default_factory=dict)  # each member's consumer in the chain

    @property
    def ops(self) -> list[Op]:
        return [e.op for e in self.einsums] + self.relabels

    def leaf_atoms(self) -> list[list[Atom]]:
        return [expand([a for dim in labels for a in dim]) for _, labels, _ in self.leaves]

    def output_atoms(self) -> list[Atom]:
        return expand([a for dim in self.output for a in dim])


class ChainFinder:
    """Finds the chains of one block, from each root (a linear einsum no chain absorbs) down."""

    def __init__(self, block: list[Op], uses: Uses, values: dict[str, int], recompute: bool) -> None:
        self.block = block
        self.in_block = set(block)
        self.uses = uses
        self.values = values
        self.recompute = recompute
        self.linear: dict[Op, LinearEinsum] = {}
        self.why_not: dict[Op, str] = {}
        for op in block:
            if isinstance(op, EinsumOp):
                try:
                    self.linear[op] = linear_einsum(op, values)
                except NotLinear as err:
                    self.why_not[op] = str(err)
        self.refusals: list[Refusal] = []

    def chains(self) -> list[Chain]:
        taken: set[Op] = set()
        found: list[Chain] = []
        for op in reversed(self.block):
            if op in self.linear and op not in taken:
                chain = self._chain(self.linear[op])
                if chain is None:
                    continue
                taken.update(chain.ops)
                found.append(chain)
        return found

    def _shape(self, t: TensorType) -> tuple[int, ...]:
        return t.concrete_shape(self.values)

    def _chain(self, root: LinearEinsum) -> Chain | None:
        chain = Chain(root.op)
        rtype = root.op.outputs[0].type
        chain.output = [_fresh(n, d, c) for n, d, c in zip(self._shape(rtype), rtype.shape, root.output, strict=True)]
        try:
            self._einsum(chain, root, chain.output)
        except _Unaligned:
            return None
        return chain

    def _einsum(self, chain: Chain, lin: LinearEinsum, labels: list[list[Atom]]) -> None:
        chain.einsums.append(lin)
        chain.factor *= lin.factor
        letters: dict[str, list[Atom]] = dict(zip(lin.output, labels, strict=True))
        for letter, dim in lin.ranges.items():
            if letter not in letters:
                size = dim if isinstance(dim, int) else _int(dim, self.values)
                letters[letter] = _fresh(size, dim, letter)
        for binding, term in zip(lin.op.inputs, lin.terms, strict=True):
            self._value(chain, binding.value, [letters[c] for c in term], lin.op, lin.op)

    def _value(self, chain: Chain, v: Value, labels: list[list[Atom]], consumer: EinsumOp, reader: Op) -> None:
        """Labels `v` (read by `reader`, on the way to the chain's einsum `consumer`) and goes on through its
        producer when the rules allow."""
        producer = v.owner
        reason = self._refuse(v, producer, reader, chain.root)
        if reason is not None:
            if reason and isinstance(producer, EinsumOp) and len(consumer.inputs) > 1:
                self.refusals.append(Refusal(consumer, producer, v, reason))
            chain.leaves.append((v, labels, consumer))
            return
        assert producer is not None
        chain.parent[producer] = consumer
        if len(self.uses.of_value(v)) > 1 or self._read_twice(v):
            chain.shared.append(producer)
        if isinstance(producer, EinsumOp):
            self._einsum(chain, self.linear[producer], labels)
            return
        chain.relabels.append(producer)
        source = producer.operands[0]
        assert source.type is not None and v.type is not None
        src_shape, dst_shape = self._shape(source.type), self._shape(v.type)
        inner: list[list[Atom]] = [[] for _ in src_shape]
        index_map = relabel_map(producer)
        if isinstance(index_map, Permutation):
            for d, p in enumerate(index_map.perm):
                inner[p] = labels[d]
        else:
            groups = reshape_groups(src_shape, dst_shape)
            assert groups is not None  # _refuse checked it
            for gs, gd in groups:
                if len(gs) == 1:
                    inner[gs[0]] = [a for d in gd for a in labels[d]]
                else:
                    parts = _split([a for d in gd for a in labels[d]],
                                   [(src_shape[i], source.type.shape[i]) for i in gs])
                    if parts is None:
                        raise _Unaligned
                    for i, part in zip(gs, parts, strict=True):
                        inner[i] = part
        self._value(chain, source, inner, consumer, producer)

    def _read_twice(self, v: Value) -> bool:
        return sum(1 for r in self.uses.of_value(v) for x in r.operands if x is v) > 1

    def _refuse(self, v: Value, producer: Op | None, reader: Op, root: EinsumOp) -> str | None:
        """None when the chain may go through `producer` to `v`; otherwise why not ("" for reasons not worth
        a remark, such as a function argument)."""
        if producer is None or producer not in self.in_block:
            return ""
        if isinstance(producer, EinsumOp) and producer not in self.linear:
            return f"@{producer.symbol} {self.why_not[producer]}"
        if not isinstance(producer, EinsumOp) and relabel_map(producer) is None:
            return ""
        if isinstance(relabel_map(producer), Regroup):
            src, dst = producer.operands[0].type, v.type
            assert src is not None and dst is not None
            if reshape_groups(self._shape(src), self._shape(dst)) is None:
                return f"%{v.name} is a reshape that mixes dimensions (not a split or merge)"
        dtype = root.outputs[0].type.dtype
        assert v.type is not None
        if v.type.dtype != dtype:
            return f"%{v.name} is {v.type.dtype.spelling}, the chain {dtype.spelling} (a change of dtype)"
        readers = [r for r in self.uses.of_value(v) if r is not reader]
        if (readers or self._read_twice(v)) and not self.recompute:
            other = readers[0] if readers else reader
            what = f"@{other.symbol}" if isinstance(other, EinsumOp) else other.opname
            return (f"%{v.name} is also used outside the chain (by {what}); reorder-einsum{{recompute=true}} "
                    "would compute it twice")
        return None


class _Unaligned(Exception):
    """Reshapes whose splits do not line up with the atoms found so far."""


def _int(dim: Dim, values: dict[str, int]) -> int:
    return dim if isinstance(dim, int) else evaluate_int(dim, values)
