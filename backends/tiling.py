"""Cache-aware traffic: the least DRAM traffic of an einsum, or of a fused chain of einsums, on a two-level
machine (DRAM → an on-chip buffer of C bytes), over a documented space of tilings, found exactly with
`scipy.optimize.milp`. docs/tiling.md states the mapping space, the traffic model and the formulation; this
module follows it section by section:

- the problem: `Window` / `Access` / `Step` / `Tensor` / `Problem`, built from einsum descriptions
  (`EinsumDesc`, from the IR by `desc_of`) with exact footprints from ISL (`build_problem`);
- the space and its traffic model: `Space` (uses, on-chip slabs, tile candidates, `Space.evaluate`);
- the solvers: `Space.solve` (the MILP) and `Space.brute_force` (enumeration over the same space, for tests);
- chains of the IR: `chain_traffic` (a fused group against its per-einsum bound) and `curve`.

Nothing in the MILP enumerates: loop orders are encoded as nested sets of tiled loops per operand, so the
formulation covers every order at once (docs/tiling.md, "Why the MILP is exact").
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import islpy as isl
import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import csr_array

from solar.ir.einsum_spec import index_ranges, parse_spec, parse_where
from solar.ir.expr import Binary, Expr, IndexRef, free_indices, linear_form
from solar.ir.ops import EinsumOp, FuncOp, Op, Value
from solar.ir.types import Dim
from solar.passes.analysis.isl_model import count, isl_expr

# ---- the problem ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Window:
    """One dimension of a tensor access: Σ coefficient·index (+ a constant, which no extent depends on),
    inside a dimension of `size` elements. Indices of extent 1 are left out: they never vary."""

    terms: tuple[tuple[str, int], ...]  # (index, |coefficient|)
    size: int
    full: int  # distinct in-bounds values over the indices' whole ranges (exact, from ISL)

    def extent(self, span: dict[str, int], extents: dict[str, int]) -> int:
        """Distinct values the entry takes while each index `u` ranges over `span[u]` consecutive values:
        exact (`full`) when every index spans its whole range; for a tile, the span divided by the gcd of
        the varying coefficients, at most the product of the ranges (a stride larger than the window
        leaves holes) and at most the dimension (a tile's padding is not read)."""
        if all(span[u] == extents[u] for u, _ in self.terms):
            return self.full
        total, g, prod = 0, 0, 1
        for u, c in self.terms:
            n = span[u]
            if n > 1:
                total += c * (n - 1)
                g = math.gcd(g, c)
                prod *= n
        if g == 0:
            return 1
        return min(total // g + 1, prod, self.size)


@dataclass(frozen=True)
class Access:
    """How one step reads (or writes) one tensor; `exact` is the number of distinct in-bounds elements
    it touches over the step's whole domain (ISL), the compulsory traffic of this access."""

    tensor: str
    label: str  # the binding name in the einsum (A, W, Y)
    dims: tuple[Window, ...]
    exact: int

    @property
    def indices(self) -> frozenset[str]:
        return frozenset(u for w in self.dims for u, _ in w.terms)


@dataclass(frozen=True)
class Step:
    """One einsum of a chain, over global index names (shared between steps through the tensors they
    exchange). `density`: the fraction of its iteration box inside its where-clause (padding guards
    excluded); 1.0 for a rectangular domain."""

    name: str
    indices: tuple[str, ...]
    reads: tuple[Access, ...]
    write: Access
    density: float = 1.0


@dataclass(frozen=True)
class Tensor:
    name: str
    itemsize: int
    external: bool = True  # a produced tensor read after the chain (so written to DRAM)
    shared: bool = False  # an input several steps read through one access: one slab serves them all
    footprint: int = 0  # for a shared input: the distinct elements its readers touch together


@dataclass(frozen=True)
class Problem:
    name: str
    extents: tuple[tuple[str, int], ...]
    steps: tuple[Step, ...]
    tensors: tuple[Tensor, ...]

    @property
    def extent(self) -> dict[str, int]:
        return dict(self.extents)

    def tensor(self, name: str) -> Tensor:
        return next(t for t in self.tensors if t.name == name)


class Unfusable(ValueError):
    """A chain that the fused mapping space cannot express (the reason is for the user)."""


# ---- from einsum descriptions to problems ----------------------------------------------------------


@dataclass(frozen=True)
class EinsumDesc:
    """An einsum with concrete shapes: what `build_problem` needs (tests write these directly; `desc_of`
    makes them from the IR). Operands are (tensor, binding label, shape, bytes per element)."""

    name: str
    spec: str
    inputs: tuple[tuple[str, str, tuple[int, ...], int], ...]
    output: tuple[str, str, tuple[int, ...], int]
    where: str | None = None


def desc_of(op: EinsumOp, values: dict[str, int]) -> EinsumDesc:
    """The description of an IR einsum, tensors named by their SSA values."""
    def shape(v: Value) -> tuple[int, ...]:
        assert v.type is not None
        return v.type.concrete_shape(values)

    inputs = tuple((b.value.name, b.name, shape(b.value), _itemsize(b.value)) for b in op.inputs)
    out = op.outputs[0]
    output = (op.results[0].name, out.name, out.type.concrete_shape(values), out.type.dtype.itemsize)
    return EinsumDesc(op.symbol, op.spec, inputs, output, op.where)


def _itemsize(v: Value) -> int:
    assert v.type is not None
    return v.type.dtype.itemsize


@dataclass
class _StepModel:
    """One einsum parsed: its local index ranges, the affine entries of every access, and ISL images."""

    desc: EinsumDesc
    ranges: dict[str, int]
    entries: list[tuple[Expr, ...]]  # per input, then the output
    images: list[isl.Set]  # per input, then the output: in-bounds elements touched
    density: float


def _step_model(desc: EinsumDesc) -> _StepModel:
    spec = parse_spec(desc.spec)
    where = parse_where(desc.where) if desc.where else []
    shapes: list[tuple[Dim, ...]] = [s for _, _, s, _ in desc.inputs] + [desc.output[2]]
    ranges = {k: int(v) for k, v in index_ranges(spec, shapes, where).items()}  # type: ignore[call-overload]
    names = {"%" + i: "x_" + i for i in spec.indices}
    dims = ", ".join(names["%" + i] for i in spec.indices)
    box = [f"0 <= {names['%' + i]} < {ranges[i]}" for i in spec.indices]
    domain = isl.Set(f"{{ E[{dims}] : {' and '.join(box + [isl_expr(c, names) for c in where])} }}")
    terms = [*spec.inputs, spec.output]
    images = []
    for k, (term, shape) in enumerate(zip(terms, shapes, strict=True)):
        target = " and ".join(f"0 <= d{j} < {d}" for j, d in enumerate(shape)) or "true"
        space = f"T{k}[{', '.join(f'd{j}' for j in range(len(shape)))}]"
        access = isl.Map(f"{{ E[{dims}] -> T{k}[{', '.join(isl_expr(e, names) for e in term)}] }}")
        images.append(access.intersect_domain(domain).range().intersect(isl.Set(f"{{ {space} : {target} }}")))
    # Density: the where-clause without its padding guards (clipping windows to the tensor handles those).
    kept = [c for c in where if not _is_padding_guard(c, terms)]
    density = 1.0
    if kept:
        dense = isl.Set(f"{{ E[{dims}] : {' and '.join(box + [isl_expr(c, names) for c in kept])} }}")
        points = count(dense, {}) or 0
        density = points / math.prod(ranges[i] for i in spec.indices)
    return _StepModel(desc, ranges, terms, images, density)


def _is_padding_guard(c: Binary, terms: list[tuple[Expr, ...]]) -> bool:
    """`2p+r-1 >= 0`, `2p+r-1 < 32`: a constraint that only keeps a window entry inside its tensor."""
    form = linear_form(Binary("-", c.lhs, c.rhs))
    if form is None:
        return False
    coeffs = dict(form[0])
    for term in terms:
        for e in term:
            ef = linear_form(e)
            if ef is None or len(ef[0]) < 2:
                continue
            other = dict(ef[0])
            if other == coeffs or other == {k: -v for k, v in coeffs.items()}:
                return True
    return False


class _Unify:
    """Union-find over (step, letter): letters that index the same dimension of an exchanged tensor are
    one global index. A union that would make two letters of one step equal is refused."""

    def __init__(self, models: list[_StepModel]) -> None:
        self.parent: dict[tuple[int, str], tuple[int, str]] = {
            (k, i): (k, i) for k, m in enumerate(models) for i in m.ranges}
        self.ranges = {(k, i): n for k, m in enumerate(models) for i, n in m.ranges.items()}

    def find(self, a: tuple[int, str]) -> tuple[int, str]:
        while self.parent[a] != a:
            a = self.parent[a]
        return a

    def try_union(self, pairs: list[tuple[tuple[int, str], tuple[int, str]]]) -> bool:
        """Unites all pairs or none."""
        saved = dict(self.parent)
        for a, b in pairs:
            ra, rb = self.find(a), self.find(b)
            if ra == rb:
                continue
            if self.ranges[ra] != self.ranges[rb]:
                self.parent = saved
                return False
            self.parent[rb] = ra
        classes: dict[tuple[int, str], set[tuple[int, str]]] = {}
        for a in self.parent:
            classes.setdefault(self.find(a), set()).add(a)
        for members in classes.values():
            steps = [k for k, _ in members]
            if len(steps) != len(set(steps)):
                self.parent = saved
                return False
        return True


def _letters(term: tuple[Expr, ...], shape: tuple[int, ...]) -> list[str] | None:
    """The letters of a term whose every entry is a bare index, else None. A dimension of size 1 takes one
    value whatever indexes it (`Y[%n, 0, %p]` of a keepdim reduction), so it is left out."""
    out = []
    for e, size in zip(term, shape, strict=True):
        if size == 1:
            continue
        if not isinstance(e, IndexRef):
            return None
        out.append(e.name)
    return out


def build_problem(name: str, descs: Sequence[EinsumDesc], read_after: Callable[[str], bool] | None = None) -> Problem:
    """The tiling problem of a chain of einsums (program order). Tensors are matched by name: a tensor one
    step writes and a later one reads stays on chip in the fused space. `read_after(tensor)` says whether
    a produced tensor is needed after the chain (default: when no step of the chain reads it).
    Raises Unfusable when a chain of several einsums cannot be fused in this space."""
    models = [_step_model(d) for d in descs]
    produced = {d.output[0]: k for k, d in enumerate(descs)}
    readers: dict[str, list[tuple[int, int]]] = {}
    for k, d in enumerate(descs):
        for j, (t, _, _, _) in enumerate(d.inputs):
            readers.setdefault(t, []).append((k, j))
    for t, k in produced.items():
        if any(r < k for r, _ in readers.get(t, [])):
            raise Unfusable(f"'{t}' is read before it is written")
    if len(produced) != len(descs):
        raise Unfusable("two einsums of the chain write the same tensor")
    uf = _Unify(models)
    # Tensors exchanged on chip: every dimension must be indexed by a bare letter on both sides.
    for t, k in produced.items():
        wl = _letters(models[k].entries[-1], descs[k].output[2])
        for r, j in readers.get(t, []):
            rl = _letters(models[r].entries[j], descs[r].inputs[j][2])
            if wl is None or rl is None:
                raise Unfusable(f"'{t}' is exchanged through an affine window, which a fused tile cannot hold")
            if not uf.try_union([((k, a), (r, b)) for a, b in zip(wl, rl, strict=True)]):
                raise Unfusable(f"the dimensions of '{t}' cannot be matched between its writer and its readers")
    # Inputs read by several steps through bare letters share one slab when their letters can be matched.
    shared: set[str] = set()
    for t, uses in readers.items():
        if t in produced or len({k for k, _ in uses}) < 2:
            continue
        lists = [_letters(models[k].entries[j], descs[k].inputs[j][2]) for k, j in uses]
        if any(x is None for x in lists):
            continue
        (k0, _), l0 = uses[0], lists[0]
        assert l0 is not None
        pairs = [((k0, a), (k, b)) for (k, _), lk in zip(uses[1:], lists[1:], strict=True)
                 for a, b in zip(l0, lk or [], strict=True)]
        if uf.try_union(pairs):
            shared.add(t)
    # Global names: the letter of the first occurrence, numbered when two indices share a letter.
    gname: dict[tuple[int, str], str] = {}
    taken: set[str] = set()
    extents: list[tuple[str, int]] = []
    for k, m in enumerate(models):
        for i in m.ranges:
            root = uf.find((k, i))
            if root not in gname:
                base, n = i, 1
                candidate = base
                while candidate in taken:
                    n += 1
                    candidate = f"{base}{n}"
                taken.add(candidate)
                gname[root] = candidate
                extents.append((candidate, m.ranges[i]))
    glob = {(k, i): gname[uf.find((k, i))] for k, m in enumerate(models) for i in m.ranges}
    extent = dict(extents)

    def window(k: int, e: Expr, size: int) -> Window:
        form = linear_form(e)
        if form is None:
            raise Unfusable(f"a subscript of @{descs[k].name} is not affine")
        terms = tuple((glob[(k, n[1:])], abs(c)) for n, c in form[0]
                      if n.startswith("%") and extent[glob[(k, n[1:])]] > 1)
        return Window(terms, size, _values_in_bounds(e, models[k].ranges, size))

    steps = []
    tensors: dict[str, Tensor] = {}
    for k, (d, m) in enumerate(zip(descs, models, strict=True)):
        accesses = []
        for j, (t, label, shape, size) in enumerate(d.inputs):
            dims = tuple(window(k, e, n) for e, n in zip(m.entries[j], shape, strict=True))
            accesses.append(Access(t, label, dims, _card(m.images[j])))
            tensors.setdefault(t, Tensor(t, size))
        t, label, shape, size = d.output
        dims = tuple(window(k, e, n) for e, n in zip(m.entries[-1], shape, strict=True))
        write = Access(t, label, dims, _card(m.images[-1]))
        external = read_after(t) if read_after is not None else t not in readers
        tensors[t] = Tensor(t, size, external=external or t not in readers)
        indices = tuple(dict.fromkeys(glob[(k, i)] for i in m.ranges if m.ranges[i] > 1))
        steps.append(Step(d.name, indices, tuple(accesses), write, m.density))
    for t, uses in readers.items():
        if t in produced or len(uses) < 2:
            continue
        # The distinct elements all readers touch: the union of their images (one tensor space per name).
        # A tensor read through several accesses is read from DRAM once (docs/tiling.md, "Chains").
        images = [models[k].images[j].set_tuple_name("T") for k, j in uses]
        union = images[0]
        for im in images[1:]:
            union = union.union(im)
        tensors[t] = Tensor(t, tensors[t].itemsize, shared=t in shared, footprint=_card(union))
    return Problem(name, tuple((u, n) for u, n in extents if n > 1), tuple(steps), tuple(tensors.values()))


def _values_in_bounds(e: Expr, ranges: dict[str, int], size: int) -> int:
    """Distinct values of an affine subscript entry inside [0, size) while its indices cover their ranges."""
    letters = sorted({r.name for r in free_indices(e)})
    names = {"%" + i: "x_" + i for i in letters}
    cons = " and ".join([f"0 <= x_{i} < {ranges[i]}" for i in letters] + [f"v = {isl_expr(e, names)}"])
    inner = f"exists ({', '.join(names.values())} : {cons})" if letters else cons
    return max(1, _card(isl.Set(f"{{ [v] : {inner} and 0 <= v < {size} }}")))


def _card(s: isl.Set) -> int:
    return count(s, {}) or 0


def einsum_problem(spec: str, shapes: Sequence[tuple[int, ...]], itemsize: int = 4, where: str | None = None,
                   name: str = "einsum") -> Problem:
    """A single einsum from subscripts and shapes (operands then result), for tests and benchmarks."""
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    inputs = tuple((letters[k], letters[k], tuple(s), itemsize) for k, s in enumerate(shapes[:-1]))
    output = ("Out", "Out", tuple(shapes[-1]), itemsize)
    return build_problem(name, [EinsumDesc(name, spec, inputs, output, where)])


# ---- the space --------------------------------------------------------------------------------------


def candidates(n: int, fine: bool = True) -> tuple[int, ...]:
    """Tile sizes considered for an index of extent n: its divisors and the powers of two below it, and
    with `fine` also three times powers of two (a last partial tile is charged exactly): the 3·2^k sizes let
    a near-square tile plus its operands' slivers fill a power-of-two buffer. Where that exceeds 24 values,
    the divisors are kept only as the exact quotients n/2^k. Chains use the coarser set (docs/tiling.md)."""
    divs = {d for k in range(1, math.isqrt(n) + 1) if n % k == 0 for d in (k, n // k)}
    grid = {m << k for m in ((1, 3) if fine else (1,)) for k in range(n.bit_length()) if (m << k) < n}
    cands = divs | grid
    if len(cands) > 24:
        cands = grid | {n >> k for k in range(n.bit_length()) if n % (1 << k) == 0}
    return tuple(sorted(cands))


@dataclass(frozen=True)
class Use:
    """A tensor access whose data moves between DRAM and the buffer; its retention is a choice.

    `free`: the loops that may be outside its retention level (tiled for it, set S); the rest iterate
    with its slab resident. A shared input (step None) is retained within the shared loops only."""

    label: str
    tensor: str
    step: int | None
    free: tuple[str, ...]
    dims: tuple[Window, ...]
    itemsize: int
    exact: int
    write: bool
    reduced: frozenset[str]
    density: float
    live: tuple[int, int]


@dataclass(frozen=True)
class Slab:
    """A tensor produced and consumed inside the chain: its tile over the shared loops stays on chip."""

    tensor: str
    dims: tuple[Window, ...]
    itemsize: int
    exact: int
    written: bool  # also needed after the chain: written to DRAM once per shared tile
    density: float
    live: tuple[int, int]


@dataclass(frozen=True)
class Mapping:
    """One point of the space, evaluated: tile sizes, the tiled loops of each use (its set S), the
    resulting traffic and peak buffer in bytes, and a loop order consistent with the sets."""

    problem: str
    capacity: float
    tiles: dict[str, int]
    tiled: dict[str, frozenset[str]]
    traffic: float
    peak: int
    per_use: dict[str, tuple[float, int]]  # label -> (traffic bytes, buffer bytes)
    order: tuple[str, ...]
    compulsory: int
    solver: str = "milp"
    optimal: bool = True

    def loads(self, label: str, extents: dict[str, int]) -> int:
        return math.prod(-(-extents[u] // self.tiles[u]) for u in self.tiled[label])


class Space:
    """The mapping space of one problem (docs/tiling.md): tile sizes per index from `candidates`, one
    loop order over the shared indices and one over each step's private indices inside them, and per use
    a retention level (the set S of loops outside it). Traffic of a use = slab footprint × loads."""

    SUBSET_USES = 6  # shared-loop-order formulations enumerate subsets of the uses per shared index

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.extent = problem.extent
        steps = problem.steps
        self.multi = len(steps) > 1
        common = set(steps[0].indices)
        for s in steps[1:]:
            common &= set(s.indices)
        self.shared = tuple(u for u in steps[0].indices if u in common)
        self.private = [tuple(u for u in s.indices if u not in common) for s in steps]
        produced = {s.write.tensor: k for k, s in enumerate(steps)}
        readers: dict[str, list[int]] = {}
        for k, s in enumerate(steps):
            for a in s.reads:
                readers.setdefault(a.tensor, []).append(k)
        self.uses: list[Use] = []
        self.slabs: list[Slab] = []
        forced: set[str] = set()
        done_shared: set[str] = set()
        for k, s in enumerate(steps):
            for a in s.reads:
                if a.tensor in produced:
                    continue
                t = problem.tensor(a.tensor)
                if t.shared and len(set(readers[a.tensor])) > 1:
                    if a.tensor in done_shared:
                        continue
                    done_shared.add(a.tensor)
                    rs = sorted(set(readers[a.tensor]))
                    density = max(steps[r].density for r in rs)
                    self.uses.append(Use(a.tensor, a.tensor, None, self.shared, a.dims, t.itemsize, t.footprint,
                                         False, frozenset(), density, (rs[0], rs[-1])))
                    continue
                label = f"{s.name}.{a.label}" if self.multi else a.label
                if any(u.label == label or (u.step == k and u.tensor == a.tensor and u.dims == a.dims)
                       for u in self.uses):
                    continue  # one tensor read twice through the same subscripts (x·x): one use
                self.uses.append(Use(label, a.tensor, k, s.indices, a.dims, t.itemsize, a.exact, False,
                                     frozenset(), s.density, (k, k)))
            w = s.write
            t = problem.tensor(w.tensor)
            if w.tensor in readers:
                last = max(readers[w.tensor])
                self.slabs.append(Slab(w.tensor, w.dims, t.itemsize, w.exact, t.external, s.density, (k, last)))
                # A reduction over a shared loop must be complete before its readers run in the same tile.
                forced |= set(self.shared) - w.indices
            else:
                label = f"{s.name}.{w.label}" if self.multi else w.label
                self.uses.append(Use(label, w.tensor, k, s.indices, w.dims, t.itemsize, w.exact, True,
                                     frozenset(s.indices) - w.indices, s.density, (k, k)))
        self.forced = frozenset(forced)
        # A DRAM tensor read through several uses (a residual add re-reading a convolution's input, a step
        # reading two windows of one tensor) is one read per tile: the uses keep their own retention, and
        # the tensor moves the most any of them moves (at least the union of their footprints), holding
        # the largest of their slabs. Both are at most what the union of the slabs would need, so the
        # space stays optimistic: docs/tiling.md, "Chains".
        reads: dict[str, list[int]] = {}
        for i, use in enumerate(self.uses):
            if not use.write:
                reads.setdefault(use.tensor, []).append(i)
        self.merged: dict[str, tuple[int, ...]] = {t: tuple(ix) for t, ix in reads.items() if len(ix) > 1}
        self.merged_of: dict[int, str] = {i: t for t, ix in self.merged.items() for i in ix}
        self.merged_floor: dict[str, float] = {
            t: float(max(problem.tensor(t).footprint, *(self.uses[i].exact for i in ix)) * self.uses[ix[0]].itemsize)
            for t, ix in self.merged.items()}
        self.indices = tuple(u for u, _ in problem.extents)
        # A batch index: a bare subscript of every use and slab, and nowhere inside a window. Tiling it by 1
        # for every use changes no traffic (each use depends on it: no reload, no halo) and shrinks every
        # slab, so it is fixed so (outermost, tile 1) rather than searched.
        accesses = [u.dims for u in self.uses] + [sl.dims for sl in self.slabs]
        self.batch = frozenset(
            b for b in self.shared if b not in forced
            and all(any(w.terms == ((b, 1),) for w in dims) for dims in accesses)
            and all(w.terms == ((b, 1),) for dims in accesses for w in dims if any(u == b for u, _ in w.terms)))
        # Chains search the coarser tile grid: their formulation chooses, per index, a tile together with a
        # subset of the uses, so its size grows with both (docs/tiling.md, "The mapping space").
        self.cands = {u: (self.extent[u],) if u in forced else (1,) if u in self.batch
                      else candidates(self.extent[u], fine=not self.multi) for u in self.indices}
        # The loops whose place decides something: neither forced to one tile nor a batch index.
        fixed = self.forced | self.batch
        self.hstar = tuple(h for h in self.shared if h not in fixed)
        self.private = [tuple(u for u in p if u not in fixed) for p in self.private]
        self.uses = [dataclasses.replace(u, free=tuple(v for v in u.free if v not in fixed)) for u in self.uses]
        self.compulsory = sum(u.exact * u.itemsize for i, u in enumerate(self.uses) if i not in self.merged_of) + sum(
            self.merged_floor.values()) + sum(s.exact * s.itemsize for s in self.slabs if s.written)
        self._orders: list[tuple[tuple[int, ...], tuple[str, ...] | None]] | None = None  # see `orders`
        self._forms: dict[int, _Formulation] = {}  # by position in `_orders`, built when first solved
        self._wins: dict[int, int] = {}  # how often each order gave the optimum (tried first next time)
        self._found: list[Mapping] = []  # optima at other buffer sizes: incumbents for the next solve
        self._solved: dict[float, Mapping | None] = {}  # by buffer size
        self.factor_cache: dict[tuple[Any, ...], tuple[list[float], list[float]]] = {}  # see _Formulation.groups
        self.point_cache: dict[tuple[Any, ...], list[float]] = {}  # see _Formulation.exp_var

    # -- the traffic model ------------------------------------------------------------------------------
    def loads(self, tiles: dict[str, int], loops: Iterable[str]) -> int:
        return math.prod(-(-self.extent[u] // tiles[u]) for u in loops)

    def footprint(self, dims: tuple[Window, ...], span: dict[str, int]) -> int:
        return math.prod(w.extent(span, self.extent) for w in dims)

    def span(self, tiles: dict[str, int], tiled: Iterable[str]) -> dict[str, int]:
        s = dict(self.extent)
        for u in tiled:
            s[u] = tiles[u]
        return s

    def components(self, dims: tuple[Window, ...],
                   loops: Iterable[str]) -> list[tuple[tuple[str, ...], tuple[Window, ...]]]:
        """The factor groups of an access: indices sharing a window entry belong together (their extents
        are not separable), a loop the access does not depend on is a group of its own."""
        comp: list[set[str]] = []
        for w in dims:
            idx = {u for u, _ in w.terms}
            if not idx:
                continue
            merged = set(idx)
            for g in [g for g in comp if g & idx]:
                merged |= g
                comp.remove(g)
            comp.append(merged)
        for u in loops:
            if not any(u in g for g in comp):
                comp.append({u})
        return [(tuple(sorted(g, key=self.indices.index)),
                 tuple(w for w in dims if w.terms and {u for u, _ in w.terms} <= g)) for g in comp]

    def group_traffic(self, idx: tuple[str, ...], windows: tuple[Window, ...], tiles: dict[str, int | None],
                      reload_of: Callable[[str], bool] = lambda u: True) -> int:
        """Elements one group contributes to a slab's loads, summed over the tiles of its tiled loops
        (`tiles[u]` is None for a loop not tiled for the access): Σ over tile positions of the product of
        its windows' extents — exact for a last partial tile — times the number of tiles of each tiled
        loop the access does not depend on (a reload per tile)."""
        sizes = []
        reload = 1
        in_windows = {u for w in windows for u, _ in w.terms}
        if any(len(w.terms) > 1 for w in windows):
            # A halo window (`p + r`): adjacent tiles overlap, and a schedule walking them in order keeps the
            # overlap (a sliding window) — so, optimistically, each distinct element is loaded once per
            # reload, never once per tile. Charging the halo again per tile could exceed such a schedule.
            for u in idx:
                t = tiles.get(u)
                if t is not None and u not in in_windows and reload_of(u):
                    reload *= -(-self.extent[u] // t)
            return math.prod(w.full for w in windows) * reload
        for u in idx:
            t, n = tiles.get(u), self.extent[u]
            if t is None:
                sizes.append([(n, 1)])
                continue
            count = -(-n // t)
            if u not in in_windows:
                reload *= count if reload_of(u) else 1
                sizes.append([(n, 1)])
                continue
            last = n - (count - 1) * t
            sizes.append([(t, count)] if last == t else [(t, count - 1), (last, 1)])
        total = 0
        for combo in itertools.product(*sizes):
            span = dict(self.extent)
            weight = 1
            for u, (size, times) in zip(idx, combo, strict=True):
                span[u] = size
                weight *= times
            total += weight * math.prod(w.extent(span, self.extent) for w in windows)
        return total * reload

    def use_cost(self, use: Use, tiles: dict[str, int], tiled: frozenset[str]) -> tuple[float, int]:
        """(traffic, buffer) in bytes of one use whose loops `tiled` lie outside its retention level:
        the slab's elements summed over its loads (partial last tiles exactly); the slab held at once."""
        state: dict[str, int | None] = {u: tiles[u] if u in tiled else None for u in self.indices}
        plain = [u for u in tiled if u not in use.reduced]
        q = math.prod(self.group_traffic(idx, ws, state) for idx, ws in self.components(use.dims, plain))
        f = self.footprint(use.dims, self.span(tiles, tiled))
        if use.write:
            # A result's partial sums leave and come back when a reduction loop is outside: written on every
            # load, read back on all but the first visit of each element.
            q *= 2 * self.loads(tiles, tiled & use.reduced) - 1
        return max(float(use.exact), use.density * q) * use.itemsize, f * use.itemsize

    def slab_cost(self, slab: Slab, tiles: dict[str, int]) -> tuple[float, int]:
        f = self.footprint(slab.dims, self.span(tiles, self.shared))
        traffic = 0.0
        if slab.written:
            state: dict[str, int | None] = {u: tiles[u] if u in self.shared else None for u in self.indices}
            q = math.prod(self.group_traffic(idx, ws, state) for idx, ws in self.components(slab.dims, self.shared))
            traffic = max(float(slab.exact), slab.density * q) * slab.itemsize
        return traffic, f * slab.itemsize

    def persistent(self, use: Use, tiled: frozenset[str]) -> bool:
        """A slab retained across a shared loop stays in the buffer while every step runs (loops of one
        tile, and batch loops tiled for everyone, do not count)."""
        return self.multi and not set(self.hstar) <= tiled

    def evaluate(self, tiles: dict[str, int], tiled: dict[str, frozenset[str]], capacity: float = math.inf,
                 solver: str = "milp") -> Mapping | None:
        """The mapping's traffic and peak buffer; None when it does not fit in `capacity` bytes."""
        tiled = {label: frozenset(t) | self.batch for label, t in tiled.items()}
        per_use = {u.label: self.use_cost(u, tiles, tiled[u.label]) for u in self.uses}
        slabs = [self.slab_cost(s, tiles) for s in self.slabs]
        phases = len(self.problem.steps)
        peak = 0
        for p in range(phases):
            used = sum(b for s, (_, b) in zip(self.slabs, slabs, strict=True) if s.live[0] <= p <= s.live[1])
            held: dict[str, int] = {}  # a tensor read through several uses holds the largest of their slabs
            for i, u in enumerate(self.uses):
                if self.persistent(u, tiled[u.label]) or u.live[0] <= p <= u.live[1]:
                    if i in self.merged_of:
                        t = self.merged_of[i]
                        held[t] = max(held.get(t, 0), per_use[u.label][1])
                    else:
                        used += per_use[u.label][1]
            peak = max(peak, used + sum(held.values()))
        if peak > capacity * (1 + 1e-9):
            return None
        traffic = sum(t for i, (t, _) in enumerate(per_use.values()) if i not in self.merged_of) + sum(
            t for t, _ in slabs) + sum(max(self.merged_floor[t], *(per_use[self.uses[i].label][0] for i in ix))
                                       for t, ix in self.merged.items())
        return Mapping(self.problem.name, capacity, dict(tiles), dict(tiled), traffic, peak, per_use,
                       self.order(tiles, tiled), self.compulsory, solver)

    def order(self, tiles: dict[str, int], tiled: dict[str, frozenset[str]]) -> tuple[str, ...]:
        """A loop order (outer first) of the loops with more than one tile, consistent with the nested
        sets: loops in more uses' sets are further out; shared loops before private ones."""
        def key(u: str) -> tuple[int, int, int]:
            return (-sum(u in s for s in tiled.values()), u not in self.shared, self.indices.index(u))
        return tuple(sorted((u for u in self.indices if tiles[u] < self.extent[u]), key=key))

    # -- the solvers ------------------------------------------------------------------------------------
    def solve(self, capacity: float, time_limit: float = 20.0) -> Mapping | None:
        """The least-traffic mapping that fits `capacity` bytes (scipy.optimize.milp); None if none fits.

        One formulation per nesting order of the uses (`orders`), built when first needed. Rounds of outer
        approximation run best-first over the orders (least lower bound first, the order that won last
        time to start with), each asking only for mappings better than the incumbent, until every order's
        bound reaches it. Solutions found at other buffer sizes that fit this one seed the incumbent."""
        if capacity in self._solved:
            return self._solved[capacity]
        resident = self.resident(capacity)
        if resident is not None:
            return resident
        if self._orders is None:
            self._orders = self.orders()
        best: Mapping | None = None
        for old in self._found:
            m = self.evaluate(old.tiles, old.tiled, capacity)
            if m is not None and (best is None or m.traffic < best.traffic):
                best = m
        proven = True
        winner: int | None = None
        # Without history, formulations where results nest inside operands go first (the positions of
        # written uses in the order, earlier: smaller sets): results retained longest (output-stationary)
        # is what usually wins, and a good first incumbent lets the others stop at the root. The order is
        # only a priority; every formulation is still bounded.
        heap = [(-math.inf, (-self._wins.get(k, 0), sum(p for p, i in enumerate(o) if self.uses[i].write)), k)
                for k, (o, _) in enumerate(self._orders)]
        heapq.heapify(heap)
        while heap:
            bound, wins, k = heapq.heappop(heap)
            cutoff = best.traffic * (1 - TIE) if best is not None else math.inf
            if bound >= cutoff or (best is not None and best.traffic <= self.compulsory * (1 + TIE)):
                break  # no order can beat the incumbent (nor can anything beat the compulsory traffic)
            if k not in self._forms:
                self._forms[k] = _Formulation(self, *self._orders[k])
            status, m, bound = self._forms[k].round(capacity, cutoff, time_limit)
            if m is not None and m.peak <= capacity * (1 + 1e-9) and (best is None or m.traffic < best.traffic):
                best, winner = m, k
            if status == "more":
                heapq.heappush(heap, (bound, wins, k))
            proven &= status != "fail"
        if best is None:
            self._solved[capacity] = None
            return None
        if winner is not None:
            self._wins[winner] = self._wins.get(winner, 0) + 1
        self._found.append(best)
        result = Mapping(best.problem, capacity, best.tiles, best.tiled, best.traffic, best.peak, best.per_use,
                         best.order, best.compulsory, "milp", proven)
        self._solved[capacity] = result
        return result

    def least_peak(self) -> int:
        """The smallest buffer any mapping of the space runs in: every tile 1 (forced indices whole) and
        every loop outside every use's slab. Slabs only shrink with smaller tiles and more tiled loops."""
        tiles = {u: self.cands[u][0] if u not in self.forced else self.extent[u] for u in self.indices}
        m = self.evaluate(tiles, {u.label: frozenset(u.free) for u in self.uses})
        assert m is not None
        return m.peak

    def solve_lower(self, capacity: float) -> Mapping | None:
        """`solve`, and where no mapping fits `capacity`, the least traffic at the smallest buffer where one
        runs (`least_peak`): no schedule moves less with a smaller buffer, so it is still a lower bound, and
        the traffic never increases with the buffer size."""
        m = self.solve(capacity)
        if m is None:
            least = self.least_peak()
            if least > capacity:
                m = self.solve(float(least))
        return m

    def resident(self, capacity: float) -> Mapping | None:
        """Everything resident (no loop tiled for any use, tiles whole): when it fits and moves only the
        compulsory traffic, no mapping does better (every use moves at least its exact footprint)."""
        tiles = {u: self.extent[u] for u in self.indices}
        m = self.evaluate(tiles, {u.label: frozenset() for u in self.uses}, capacity)
        if m is not None and m.traffic <= self.compulsory * (1 + 1e-12):
            return m
        return None

    def common(self, a: int, b: int, by_loops: bool = False) -> set[str]:
        """The loops on which two uses' sets must be nested: all their loops within a step, the shared
        ones across steps. With the shared loops in a fixed order (`by_loops`), their parts are prefixes
        of it and nested already: only a step's private loops remain."""
        ua, ub = self.uses[a], self.uses[b]
        same = ua.step is not None and ua.step == ub.step
        if by_loops:
            return {u for u in ua.free if u in ub.free and same and u not in self.hstar}
        return {u for u in ua.free if u in ub.free and (same or u in self.hstar)}

    def conflict(self, a: int, b: int, by_loops: bool = False) -> bool:
        """Two uses need an order (which set contains the other) only when they share two such loops:
        sets restricted to one loop are always nested."""
        return len(self.common(a, b, by_loops)) >= 2

    def orders(self) -> list[tuple[tuple[int, ...], tuple[str, ...] | None]]:
        """The formulations to solve, each a small discrete choice fixed: either one orientation of the
        conflicting pairs of uses (from a permutation of the uses), or — where that needs fewer — an
        order of the shared loops together with one orientation of the pairs conflicting on private
        loops. Either family covers the whole space."""
        def orientations(by_loops: bool) -> list[tuple[int, ...]]:
            n = len(self.uses)
            pairs = [(a, b) for a in range(n) for b in range(a + 1, n) if self.conflict(a, b, by_loops)]
            seen: dict[tuple[bool, ...], tuple[int, ...]] = {}
            for perm in itertools.permutations(range(n)):
                pos = {i: k for k, i in enumerate(perm)}
                seen.setdefault(tuple(pos[a] < pos[b] for a, b in pairs), perm)
            return list(seen.values())

        by_uses = [(o, None) for o in orientations(False)]
        if len(self.uses) > self.SUBSET_USES or math.factorial(len(self.hstar)) >= len(by_uses):
            return self.distinct(by_uses)
        by_loops = [(o, loops) for loops in itertools.permutations(self.hstar) for o in orientations(True)]
        return self.distinct(by_loops if len(by_loops) < len(by_uses) else by_uses)

    def distinct(self, forms: list[tuple[tuple[int, ...], tuple[str, ...] | None]]
                 ) -> list[tuple[tuple[int, ...], tuple[str, ...] | None]]:
        """The formulations up to the symmetries of the space: one that a symmetry maps onto an earlier one
        covers the image of its part of the space, where every mapping has the same traffic and peak, so
        its optimum is the earlier one's and it is left out (the earliest of each class is kept)."""
        symmetries = self.symmetries()
        if not symmetries or len(forms) < 2:
            return forms

        def key(order: tuple[int, ...], loops: tuple[str, ...] | None) -> tuple[Any, ...]:
            pos = {i: k for k, i in enumerate(order)}
            n, by_loops = len(self.uses), loops is not None
            pairs = frozenset((a, b) if pos[a] < pos[b] else (b, a) for a in range(n) for b in range(a + 1, n)
                              if self.conflict(a, b, by_loops))
            return loops, pairs

        seen: set[tuple[Any, ...]] = set()
        out = []
        for order, loops in forms:
            k = key(order, loops)
            if k in seen:
                continue
            out.append((order, loops))
            seen.add(k)
            for pi, sigma in symmetries:
                seen.add((None if loops is None else tuple(pi[u] for u in loops),
                          frozenset((sigma[a], sigma[b]) for a, b in k[1])))
        return out

    SYMMETRY_LIMIT = 720  # renamings of the indices tried (products of permutations of like indices)

    def symmetries(self) -> list[tuple[dict[str, str], tuple[int, ...]]]:
        """Symmetries of the space other than the identity: a renaming π of the indices (like extents and
        roles) with a permutation σ of the uses (use a becomes use σ[a]) such that each use renamed by π
        is use σ[a] (the same windows up to the order of its dimensions, element size, footprint, density,
        phases, loops and reductions) and the slabs renamed by π are the slabs. A mapping renamed so
        (tiles[π u] = tiles[u], S[σ a] = π(S[a])) has the same traffic and peak."""
        steps = self.problem.steps
        if self.merged:  # uses that share one read: a renaming would have to keep that pairing (not tried)
            return []

        def role(u: str) -> tuple[Any, ...]:
            return (self.extent[u], u in self.forced, u in self.batch, tuple(u in s.indices for s in steps))

        classes: dict[tuple[Any, ...], list[str]] = {}
        for u in self.indices:
            classes.setdefault(role(u), []).append(u)
        if math.prod(math.factorial(len(c)) for c in classes.values()) > self.SYMMETRY_LIMIT:
            return []

        def dims(ds: tuple[Window, ...], pi: dict[str, str]) -> tuple[Any, ...]:
            return tuple(sorted((tuple(sorted((pi[u], c) for u, c in w.terms)), w.size, w.full) for w in ds))

        def use_sig(use: Use, pi: dict[str, str]) -> tuple[Any, ...]:
            return (use.step, use.write, use.itemsize, use.exact, use.density, use.live, dims(use.dims, pi),
                    frozenset(pi[u] for u in use.free), frozenset(pi[u] for u in use.reduced))

        def slab_sig(slab: Slab, pi: dict[str, str]) -> tuple[Any, ...]:
            return (dims(slab.dims, pi), slab.itemsize, slab.exact, slab.written, slab.density, slab.live)

        ident = {u: u for u in self.indices}
        targets: dict[tuple[Any, ...], list[int]] = {}
        for b, use in enumerate(self.uses):
            targets.setdefault(use_sig(use, ident), []).append(b)
        slabs = sorted(slab_sig(sl, ident) for sl in self.slabs)
        out: list[tuple[dict[str, str], tuple[int, ...]]] = []
        groups = list(classes.values())
        for perms in itertools.product(*(itertools.permutations(g) for g in groups)):
            pi = {u: v for g, p in zip(groups, perms, strict=True) for u, v in zip(g, p, strict=True)}
            if sorted(slab_sig(sl, pi) for sl in self.slabs) != slabs:
                continue
            sources: dict[tuple[Any, ...], list[int]] = {}
            for a, use in enumerate(self.uses):
                sources.setdefault(use_sig(use, pi), []).append(a)
            if any(len(targets.get(k, [])) != len(v) for k, v in sources.items()):
                continue
            # Uses alike under π may map onto each other in any order: every matching is a symmetry.
            parts = list(sources.items())
            for choice in itertools.product(*(itertools.permutations(targets[k]) for k, _ in parts)):
                sigma = [0] * len(self.uses)
                for (_, src), dst in zip(parts, choice, strict=True):
                    for a, b in zip(src, dst, strict=True):
                        sigma[a] = b
                if pi != ident or sigma != list(range(len(self.uses))):
                    out.append((pi, tuple(sigma)))
        return out

    def assignments(self) -> list[dict[str, frozenset[str]]]:
        """Every combination of retention levels the loop orders allow (for the brute force)."""
        found: set[tuple[frozenset[str], ...]] = set()
        for shared in itertools.permutations(self.hstar):
            for local in itertools.product(*(itertools.permutations(p) for p in self.private)):
                options = []
                for u in self.uses:
                    seq = shared if u.step is None else shared + local[u.step]
                    options.append([frozenset(seq[:n]) for n in range(len(seq) + 1)])
                found.update(itertools.product(*options))
        return [dict(zip((u.label for u in self.uses), combo, strict=True)) for combo in sorted(found, key=str)]

    def brute_force(self, capacity: float) -> Mapping | None:
        """The least traffic by enumerating every tile combination, loop order and retention level of the
        same space (exponential: for tests and the benchmark's ratio only). Vectorized over the tile
        grid: per use and set of tiled loops, traffic and buffer arrays; per assignment, their sums."""
        grid = [len(self.cands[u]) for u in self.indices]
        cache: dict[tuple[str, frozenset[str]], tuple[np.ndarray, np.ndarray]] = {}

        def table(fn: Callable[[dict[str, int]], tuple[float, int]], relevant: set[str]) -> tuple[np.ndarray, ...]:
            axes = [u for u in self.indices if u in relevant]
            shape = [len(self.cands[u]) if u in relevant else 1 for u in self.indices]
            t, b = np.zeros(shape), np.zeros(shape)
            for combo in itertools.product(*(range(len(self.cands[u])) for u in axes)):
                tiles = {u: self.cands[u][k] for u, k in zip(axes, combo, strict=True)}
                tiles.update({u: self.cands[u][-1] for u in self.indices if u not in relevant})
                where = tuple(combo[axes.index(u)] if u in relevant else 0 for u in self.indices)
                t[where], b[where] = fn(tiles)
            return t, b

        def use_table(use: Use, tiled: frozenset[str]) -> tuple[np.ndarray, np.ndarray]:
            key = (use.label, tiled)
            if key not in cache:
                dims = {u for w in use.dims for u, _ in w.terms}
                t, b = table(lambda tiles: self.use_cost(use, tiles, tiled), (dims | tiled) & set(tiled | dims))
                cache[key] = (t, b)
            return cache[key]

        slabs = [table(lambda tiles, sl=sl: self.slab_cost(sl, tiles), set(self.shared)) for sl in self.slabs]
        slab_traffic = sum((t for t, _ in slabs), np.zeros(grid))
        phases = range(len(self.problem.steps))
        best: tuple[float, tuple[int, ...], dict[str, frozenset[str]]] | None = None
        for combo in self.assignments():
            tiled = {label: t | self.batch for label, t in combo.items()}
            traffic = slab_traffic.copy()
            peak = np.zeros(grid)
            for p in phases:
                used = np.zeros(grid)
                for sl, (_, b) in zip(self.slabs, slabs, strict=True):
                    if sl.live[0] <= p <= sl.live[1]:
                        used = used + b
                held: dict[str, np.ndarray] = {}
                for i, u in enumerate(self.uses):
                    if self.persistent(u, tiled[u.label]) or u.live[0] <= p <= u.live[1]:
                        b = use_table(u, tiled[u.label])[1]
                        if i in self.merged_of:
                            t = self.merged_of[i]
                            held[t] = np.maximum(held[t], b) if t in held else b
                        else:
                            used = used + b
                peak = np.maximum(peak, sum(held.values(), used))
            for i, u in enumerate(self.uses):
                if i not in self.merged_of:
                    traffic = traffic + use_table(u, tiled[u.label])[0]
            for t, ix in self.merged.items():
                most = np.full(grid, self.merged_floor[t])
                for i in ix:
                    most = np.maximum(most, use_table(self.uses[i], tiled[self.uses[i].label])[0])
                traffic = traffic + most
            traffic = np.where(peak <= capacity * (1 + 1e-9), traffic, np.inf)
            k = int(np.argmin(traffic))
            if np.isfinite(traffic.flat[k]) and (best is None or traffic.flat[k] < best[0]):
                best = (float(traffic.flat[k]), np.unravel_index(k, traffic.shape), combo)
        if best is None:
            return None
        tiles = {u: self.cands[u][int(i)] for u, i in zip(self.indices, best[1], strict=True)}
        return self.evaluate(tiles, best[2], capacity, solver="brute-force")


# ---- the MILP ---------------------------------------------------------------------------------------

Lin = tuple[dict[int, float], float]  # Σ coefficient·variable + constant

# HiGHS options that scipy.optimize.milp passes through verbatim. The formulation is solved at the root
# almost always (see _Formulation), so HiGHS's primal heuristics (sub-MIPs at the root) only cost time.
# Traffic within this relative margin of the incumbent counts as a tie: the solver's feasibility tolerances
# (1e-7 absolute on a normalized objective) cannot separate closer values.
TIE = 1e-6
HIGHS_OPTIONS: dict[str, Any] = {
    "mip_heuristic_effort": 0.0,
    "mip_heuristic_run_rins": False,
    "mip_heuristic_run_rens": False,
    "mip_heuristic_run_feasibility_jump": False,
    "mip_heuristic_run_root_reduced_cost": False,
}


def _lin(terms: dict[int, float] | None = None, const: float = 0.0) -> Lin:
    return (dict(terms or {}), const)


def _scaled(a: Lin, k: float) -> Lin:
    return ({v: c * k for v, c in a[0].items()}, a[1] * k)


def _plus(*parts: Lin) -> Lin:
    out: dict[int, float] = {}
    const = 0.0
    for terms, c in parts:
        const += c
        for v, x in terms.items():
            out[v] = out.get(v, 0.0) + x
    return (out, const)


@dataclass
class _Exp:
    """A variable bounded below by exp(y), y linear: tangent cuts v ≥ e^p·(1 + y − p) at points p."""

    var: int
    y: Lin
    cuts: set[float] = field(default_factory=set)


@dataclass
class _Group:
    """One factor of a product: an index group's joint states, their indicators and factor values."""

    indices: tuple[str, ...]
    inds: list[Lin]
    traffic: list[float]  # factor of the traffic (extent × reloads), normalized by nothing tiled
    buffer: list[float]  # factor of the slab (extent), normalized likewise


class _Formulation:
    """The MILP of one space for one nesting order of its uses (docs/tiling.md, "The MILP"). Built once;
    only the capacity rows' bounds change between buffer sizes, and tangent cuts accumulate.

    For an index u, the uses that may tile it, taken in the nesting order, tile it in a suffix (their
    sets of tiled loops are nested), so one one-hot choice λ[u, l, c] (binary) says both where that suffix
    starts (l) and the tile (c). Every indicator derives from λ linearly: x[u,c] = Σ_l λ[u,l,c] (the
    tile), z[U,u] = Σ_{l ≤ pos(U)} Σ_c λ[u,l,c] (u tiled for use U), s[U,u,c] = Σ_{l ≤ pos(U)} λ[u,l,c]
    (u tiled for U with tile c). Indices sharing a window entry get joint-state variables whose
    marginals are those indicators. A use's traffic is a product of one factor per index group, so its
    logarithm y is linear in the indicators — exactly, at every integral point. τ ≥ exp(y) is imposed
    by tangents of exp: exp is convex, so no tangent cuts off a feasible point, and the tangent at y's
    value is exact there. `search` adds the tangents at each solution and re-solves until the
    solution's true traffic meets the MILP's lower bound (outer approximation). Buffers likewise, with
    the capacity a linear row per phase.
    """

    EXACT_POINTS = 64  # tangents at every achievable value of y when there are at most this many
    GRID = 0.2  # otherwise tangents every 0.2 in log (22 %) to start with; the loop adds exact ones
    ROUNDS = 40

    def __init__(self, space: Space, order: tuple[int, ...], loops: tuple[str, ...] | None = None) -> None:
        self.space = space
        self.order = order
        self.loops = loops  # a fixed order of the shared loops, or None (then uses are ordered instead)
        pos = {i: k for k, i in enumerate(order)}
        by_loops = loops is not None
        self.before = {(a, b) for a in order for b in order if pos[a] < pos[b] and space.conflict(a, b, by_loops)}
        self.lb: list[float] = []
        self.ub: list[float] = []
        self.integer: list[int] = []
        self.cost: list[float] = []
        self.rows: list[tuple[dict[int, float], float, float]] = []
        self.exps: list[_Exp] = []
        self.unit = max(1.0, float(space.compulsory))  # traffic and buffer bytes in units of the compulsory
        self._cache: tuple[Any, ...] | None = None
        sp = space
        self.x: dict[str, dict[int, Lin]] = {}
        self.z: dict[tuple[str, str], Lin] = {}
        self.s: dict[tuple[str, str], dict[int, Lin]] = {}
        for u in sp.indices:
            self.index(u)
        if loops is not None:
            # Each use's part of the shared loops is a prefix of their order.
            for use in sp.uses:
                for outer, inner in itertools.pairwise(loops):
                    if (use.label, inner) in self.z:
                        self.ge(self.z[(use.label, outer)], self.z[(use.label, inner)])
        buffers = [(use, *self.use(use, 0.0 if i in sp.merged_of else 1.0)) for i, use in enumerate(sp.uses)]
        # A tensor read through several uses moves the most any of them moves (a variable above each
        # one's traffic, at least the union of their footprints) and holds the largest of their slabs.
        for t, ix in sp.merged.items():
            most = self.var(sp.merged_floor[t] / self.unit, np.inf)
            self.cost[most] += 1.0
            for i in ix:
                self.ge(_lin({most: 1.0}), _lin({buffers[i][3]: 1.0}))
        slab_buf = [(slab, self.slab(slab)) for slab in sp.slabs]
        self.private_inside()
        # Capacity per phase (a step of the chain): rows added per solve, with the buffer size as bound.
        self.capacity: list[tuple[dict[int, float], float]] = []
        for p in range(len(sp.problem.steps)):
            parts = [b for s, b in slab_buf if s.live[0] <= p <= s.live[1]]
            for i, (use, pb, tb, _) in enumerate(buffers):
                if i in sp.merged_of:
                    continue
                parts.append(pb)
                if use.live[0] <= p <= use.live[1]:
                    parts.append(tb)
            for ix in sp.merged.values():
                held = self.var(0, np.inf)
                for i in ix:
                    use, pb, tb, _ = buffers[i]
                    self.ge(_lin({held: 1.0}), _plus(pb, tb) if use.live[0] <= p <= use.live[1] else pb)
                parts.append(_lin({held: 1.0}))
            total = _plus(*parts)
            self.capacity.append((total[0], total[1]))

    # -- building blocks --------------------------------------------------------------------------------
    def var(self, lo: float = 0.0, hi: float = np.inf, integer: bool = False) -> int:
        self.lb.append(lo)
        self.ub.append(hi)
        self.integer.append(1 if integer else 0)
        self.cost.append(0.0)
        return len(self.lb) - 1

    def row(self, terms: dict[int, float], lo: float, hi: float) -> int:
        self.rows.append((terms, lo, hi))
        return len(self.rows) - 1

    def ge(self, lhs: Lin, rhs: Lin) -> None:
        """lhs ≥ rhs."""
        d = _plus(lhs, _scaled(rhs, -1.0))
        self.row(d[0], -d[1], np.inf)

    def index(self, u: str) -> None:
        """λ[u, T, c] and the tile / tiled-for-use indicators derived from it: T is the set of uses that
        tile u, upward closed under this order (S_a ⊆ S_b for an ordered pair: a tiles u ⇒ b does)."""
        sp = self.space
        ranked = [i for i in self.order if u in sp.uses[i].free]
        by_loops = self.loops is not None
        above = {i: {j for j in ranked if (i, j) in self.before and u in sp.common(i, j, by_loops)} for i in ranked}
        for i in ranked:  # transitive closure through uses that also have u
            stack = list(above[i])
            while stack:
                j = stack.pop()
                for k in above[j] - above[i]:
                    above[i].add(k)
                    stack.append(k)
        sets = [frozenset(t) for r in range(len(ranked) + 1) for t in itertools.combinations(ranked, r)
                if all(above[i] <= set(t) for i in t)]
        n = sp.extent[u]
        cands = sp.cands[u]  # ascending: the last is the whole extent, or the one tile a fixed index has
        # Tiles matter where a use tiles u, or for the slabs of a chain (shared loops); elsewhere one
        # canonical tile (the whole extent). In a single einsum, tiling u by its whole extent is the same
        # as not tiling it, so that choice is left out (in a chain it also decides what a slab holds).
        lam: dict[tuple[frozenset[int], int], int] = {}
        for t in sets:
            for c in cands:
                if not t and c != cands[-1] and not (sp.multi and u in sp.shared):
                    continue
                if t and c == n and not sp.multi and len(cands) > 1:
                    continue
                lam[(t, c)] = self.var(0, 1, True)
        self.row({v: 1.0 for v in lam.values()}, 1.0, 1.0)
        tile: dict[int, dict[int, float]] = {c: {} for c in cands}
        used: dict[int, dict[int, dict[int, float]]] = {i: {c: {} for c in cands} for i in ranked}
        for (t, c), v in lam.items():
            tile[c][v] = 1.0
            for i in t:
                used[i][c][v] = 1.0
        self.x[u] = {c: _lin(tile[c]) for c in cands}
        for i in ranked:
            label = sp.uses[i].label
            self.z[(label, u)] = _lin({v: 1.0 for per in used[i].values() for v in per})
            self.s[(label, u)] = {c: _lin(used[i][c]) for c in cands}

    def states(self, label: str, u: str, free: bool, fixed: bool) -> list[tuple[int | None, Lin]]:
        """(tile, or None for 'not tiled', and its indicator) for index u of a use; of a slab when
        `fixed` (its shared loops are always tiled, the others never). Impossible states are left out."""
        if fixed:
            if free:
                return [(c, ind) for c, ind in self.x[u].items() if ind[0]]
            return [(None, _lin(const=1.0))]
        if u in self.space.batch:
            return [(1, _lin(const=1.0))]
        if not free:
            return [(None, _lin(const=1.0))]
        out: list[tuple[int | None, Lin]] = [(None, _plus(_lin(const=1.0), _scaled(self.z[(label, u)], -1.0)))]
        out += [(c, ind) for c, ind in self.s[(label, u)].items() if ind[0]]
        return out

    def joint(self, per: list[list[tuple[int | None, Lin]]]) -> tuple[list[tuple[Any, ...]], list[Lin]]:
        """Joint states of several indices, with indicators whose marginals are the per-index ones."""
        combos = list(itertools.product(*per))
        if len(per) == 1:
            return combos, [st[0][1] for st in combos]
        ys = [self.var(0, 1) for _ in combos]
        for k, u_states in enumerate(per):
            for tile, ind in u_states:
                sel = {y: 1.0 for y, st in zip(ys, combos, strict=True) if st[k][0] == tile}
                d = _plus(_lin(sel), _scaled(ind, -1.0))
                self.row(d[0], -d[1], -d[1])
        return combos, [_lin({y: 1.0}) for y in ys]

    def groups(self, label: str, dims: tuple[Window, ...], free: Sequence[str], fixed: bool,
               reload_of: Callable[[str], bool]) -> list[_Group]:
        """The factors of an access (`Space.components`), each with its joint states' indicators, traffic
        factors (`Space.group_traffic`) and buffer factors, normalized by their value with nothing tiled."""
        sp = self.space
        out = []
        for idx, windows in sp.components(dims, free):
            per = [self.states(label, u, u in free, fixed) for u in idx]
            combos, inds = self.joint(per)
            # The factor values depend on the states' tiles only, not on the order this formulation fixes:
            # computed once per space.
            key = (idx, windows, tuple(tuple(t for t, _ in st) for st in per), tuple(reload_of(u) for u in idx))
            if key not in sp.factor_cache:
                base = math.prod(w.extent(dict(sp.extent), sp.extent) for w in windows)
                none: dict[str, int | None] = {}
                base_traffic = sp.group_traffic(idx, windows, none, reload_of)
                traffic, buffer = [], []
                for st in combos:
                    state = {u: tile for u, (tile, _) in zip(idx, st, strict=True)}
                    span = {**sp.extent, **{u: t for u, t in state.items() if t is not None}}
                    traffic.append(sp.group_traffic(idx, windows, state, reload_of) / base_traffic)
                    buffer.append(math.prod(w.extent(span, sp.extent) for w in windows) / base)
                sp.factor_cache[key] = (traffic, buffer)
            traffic, buffer = sp.factor_cache[key]
            out.append(_Group(idx, inds, traffic, buffer))
        return out

    def exp_var(self, const: float, factors: list[tuple[list[Lin], list[float]]], lo: float,
                cost: float) -> tuple[int, float]:
        """A variable v ≥ const·Π factors (and ≥ lo), weighted `cost` in the objective; returns v and the
        largest value the product takes. A factor is a list of indicators (summing to one) and the
        factor's value with each; all values are positive.

        With one varying factor the product is linear in its indicators: v ≥ const·Σ value·indicator is
        exact at every integral point and, as the convex hull, the tightest relaxation (no logarithm, no
        tangents). With several, v ≥ exp(y) for y the product's logarithm, by tangents (`cut`), and also
        v ≥ (the other factors at their least)·(this factor, linear) for each factor: valid at every
        integral point, and far tighter in the relaxation than tangents, which let a fractional solution
        average the logarithms of its tiles (a geometric mean, below the arithmetic one)."""
        varying = [(inds, vals) for inds, vals in factors if len(set(vals)) > 1]
        const *= math.prod(vals[0] for _, vals in factors if len(set(vals)) == 1)
        v = self.var(max(lo, const) if not varying else lo, np.inf)
        self.cost[v] += cost
        least = [min(vals) for _, vals in varying]
        for h, (inds, vals) in enumerate(varying):
            k = const * math.prod(m for g, m in enumerate(least) if g != h)
            self.ge(_lin({v: 1.0}), _plus(*(_scaled(ind, k * f) for ind, f in zip(inds, vals, strict=True))))
        if len(varying) <= 1:
            return v, const * max((max(vals) for _, vals in varying), default=1.0)
        logs = [[math.log(f) for f in vals] for _, vals in varying]
        y = _plus(_lin(const=math.log(const)),
                  *(_scaled(ind, f) for (inds, _), lv in zip(varying, logs, strict=True)
                    for ind, f in zip(inds, lv, strict=True)))
        # y gets a variable of its own, so that each tangent cut has two nonzeros, not one per indicator.
        yv = self.var(-np.inf, np.inf)
        d = _plus(_lin({yv: 1.0}), _scaled(y, -1.0))
        self.row(d[0], -d[1], -d[1])
        ex = _Exp(v, _lin({yv: 1.0}))
        self.exps.append(ex)
        key = (round(y[1], 12), tuple(tuple(lv) for lv in logs))
        if key not in self.space.point_cache:  # the same in every formulation of the space
            self.space.point_cache[key] = _breakpoints(y[1], logs, self.EXACT_POINTS, self.GRID)
        for p in self.space.point_cache[key]:
            self.cut(ex, p)
        return v, math.exp(y[1] + sum(max(lv) for lv in logs))

    def cut(self, ex: _Exp, p: float) -> bool:
        """The tangent of exp at p: v ≥ e^p·(1 + y − p), i.e. v − e^p·y ≥ e^p·(1 − p) (y is one variable)."""
        key = round(p, 10)
        if key in ex.cuts:
            return False
        ex.cuts.add(key)
        g = math.exp(p)
        ((yv, coeff),) = ex.y[0].items()
        self.rows.append(({ex.var: 1.0, yv: -g * coeff}, g * (1.0 - p) + g * ex.y[1], np.inf))
        return True

    # -- uses, slabs, nesting ---------------------------------------------------------------------------
    def use(self, use: Use, cost: float = 1.0) -> tuple[Lin, Lin, int]:
        """Adds a use's traffic (weighted `cost` in the objective) and returns its buffer bytes held in
        every phase (persistent) and in its own phases only (transient), and its traffic variable."""
        sp = self.space
        label = use.label
        plain = [u for u in use.free if u not in use.reduced]
        groups = self.groups(label, use.dims, plain, False, lambda u: True)
        base = sp.footprint(use.dims, dict(sp.extent))
        factors = [(g.inds, g.traffic) for g in groups]
        red = [u for u in use.free if u in use.reduced]
        if use.write and red:
            # Read-backs: traffic = (traffic without reduction loops)·(2R − 1), R = Π of their tiles.
            combos, inds = self.joint([self.states(label, u, True, False) for u in red])
            vals = []
            for st in combos:
                r = math.prod(-(-sp.extent[u] // tile) for u, (tile, _) in zip(red, st, strict=True)
                              if tile is not None)
                vals.append(2.0 * r - 1.0)
            factors.append((inds, vals))
        a = use.itemsize / self.unit
        traffic, _ = self.exp_var(a * use.density * base, factors, a * use.exact, cost)
        beta, top = self.exp_var(use.itemsize * base / self.unit, [(g.inds, g.buffer) for g in groups if g.buffer],
                                 0.0, 0.0)
        if not sp.multi:
            return _lin({beta: 1.0}), _lin(), traffic
        pers = self.var(0, 1, True)
        for h in sp.hstar:
            if (label, h) in self.z:  # persistent unless every shared loop is tiled for it
                self.ge(_plus(_lin({pers: 1.0}), self.z[(label, h)]), _lin(const=1.0))
        pb, tb = self.var(0, np.inf), self.var(0, np.inf)
        self.ge(_lin({pb: 1.0, pers: -top}, top), _lin({beta: 1.0}))
        self.ge(_lin({tb: 1.0, pers: top}), _lin({beta: 1.0}))
        return _lin({pb: 1.0}), _lin({tb: 1.0}), traffic

    def slab(self, slab: Slab) -> Lin:
        """Adds a slab's write traffic (when it is also a result) and returns its buffer bytes."""
        sp = self.space
        shared = tuple(sp.shared)
        groups = self.groups("", slab.dims, shared, True, lambda u: u in shared)
        base = sp.footprint(slab.dims, dict(sp.extent))
        beta, _ = self.exp_var(slab.itemsize * base / self.unit, [(g.inds, g.buffer) for g in groups], 0.0, 0.0)
        if slab.written:
            a = slab.itemsize / self.unit
            self.exp_var(a * slab.density * base, [(g.inds, g.traffic) for g in groups], a * slab.exact, 1.0)
        return _lin({beta: 1.0})

    def private_inside(self) -> None:
        """A step's private loop is tiled for a use only when every shared loop is (they are outside)."""
        sp = self.space
        for a in sp.uses:
            if sp.multi and a.step is not None:
                for p in sp.private[a.step]:
                    for h in sp.hstar:
                        self.ge(self.z[(a.label, h)], self.z[(a.label, p)])

    # -- solving ----------------------------------------------------------------------------------------
    def _matrix(self, rows: list[tuple[dict[int, float], float, float]]) -> csr_array:
        data, ri, ci = [], [], []
        for r, (terms, _, _) in enumerate(rows):
            for v, c in terms.items():
                if c != 0.0:
                    data.append(c)
                    ri.append(r)
                    ci.append(v)
        return csr_array((np.array(data, dtype=float), (np.array(ri, dtype=np.int64), np.array(ci, dtype=np.int64))),
                         shape=(len(rows), len(self.lb)))

    def _run(self, capacity: float, cutoff: float, time_limit: float) -> Any:
        res = self._solve(capacity, cutoff, time_limit, True)
        if res.status == 4:  # HiGHS reports a solve error on some presolved models: try without presolve
            res = self._solve(capacity, cutoff, time_limit, False)
        return res

    def relaxation(self, capacity: float, time_limit: float) -> float:
        """The LP relaxation's optimum in bytes (a lower bound of this order's traffic; ∞ if infeasible)."""
        res = self._solve(capacity, math.inf, time_limit, True, relax=True)
        return res.fun * self.unit if res.status == 0 else (math.inf if res.status == 2 else -math.inf)

    def _solve(self, capacity: float, cutoff: float, time_limit: float, presolve: bool, relax: bool = False) -> Any:
        """One MILP solve. The matrix is cached: base rows and tangent cuts, then the capacity rows, then
        the cutoff row (objective ≤ cutoff, only mappings better than the incumbent); only bounds change."""
        if self._cache is None or self._cache[0] != len(self.rows):
            extra = [(terms, -np.inf, np.inf) for terms, _ in self.capacity]
            extra.append(({v: c for v, c in enumerate(self.cost) if c}, -np.inf, np.inf))
            rows = self.rows + extra
            self._cache = (len(self.rows), self._matrix(rows), np.array([r[1] for r in rows]),
                           np.array([r[2] for r in rows]), np.array(self.cost), np.array(self.integer),
                           Bounds(np.array(self.lb), np.array(self.ub)))
        _, matrix, lo, hi, cost, integrality, bounds = self._cache
        hi = hi.copy()
        n = len(self.rows)
        for k, (_, const) in enumerate(self.capacity):
            hi[n + k] = capacity / self.unit - const
        hi[-1] = cutoff / self.unit if math.isfinite(cutoff) else np.inf
        if relax:
            integrality = np.zeros_like(integrality)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # scipy notes that HiGHS gets options verbatim
            return milp(cost, integrality=integrality, bounds=bounds, constraints=LinearConstraint(matrix, lo, hi),
                        options={"time_limit": time_limit, "mip_rel_gap": 1e-9, "presolve": presolve,
                                 **HIGHS_OPTIONS})

    def value(self, e: Lin, x: np.ndarray) -> float:
        return e[1] + sum(c * x[v] for v, c in e[0].items())

    def round(self, capacity: float, cutoff: float, time_limit: float) -> tuple[str, Mapping | None, float]:
        """One outer-approximation round under `capacity`, asking for traffic below `cutoff`:
        ('none', None, ∞) when this order has nothing better; ('done', m, bound) when m is this order's
        optimum (its true traffic meets the MILP's bound); ('more', m, bound) when the tangents at the
        solution were added and another round may improve; ('fail', m, bound) when the solver stopped
        early or no tangent could be added."""
        sp = self.space
        res = self._run(capacity, cutoff, time_limit)
        if res.x is None:
            return ("none" if res.status == 2 else "fail"), None, math.inf
        x = res.x
        tiles = {u: max(self.x[u], key=lambda c, u=u: self.value(self.x[u][c], x)) for u in sp.indices}
        tiled = {use.label: frozenset(u for u in use.free if self.value(self.z[(use.label, u)], x) > 0.5)
                 for use in sp.uses}
        m = sp.evaluate(tiles, tiled, capacity)
        bound = getattr(res, "mip_dual_bound", None)
        bound = (res.fun if bound is None or not np.isfinite(bound) else bound) * self.unit
        if res.status != 0:
            return "fail", m, bound
        if m is not None and m.traffic <= bound * (1 + TIE):
            return "done", m, bound
        added = False
        for ex in self.exps:
            added |= self.cut(ex, self.value(ex.y, x))
        return ("more" if added else "fail"), m, bound


def _breakpoints(const: float, logs: list[list[float]], limit: int, step: float) -> list[float]:
    """Values of const + Σ (one value of each list): all of them when they are at most `limit`, else a grid
    with spacing `step` over their range."""
    acc = np.array([const])
    for lv in logs:
        acc = np.unique(np.round(acc[:, None] + np.unique(np.round(lv, 10))[None, :], 10))
        if acc.size > limit:
            lo = const + sum(min(x) for x in logs)
            hi = const + sum(max(x) for x in logs)
            n = max(1, math.ceil((hi - lo) / step))
            return [lo + (hi - lo) * k / n for k in range(n + 1)]
    return [float(v) for v in acc]


# ---- the IR: einsums, units and groups as tiling problems -------------------------------------------


@lru_cache(maxsize=1024)
def space_of(problem: Problem) -> Space:
    """One space per problem, kept: its formulations, cuts and earlier optima serve the next buffer size."""
    return Space(problem)


@lru_cache(maxsize=1024)
def problem_of(name: str, descs: tuple[EinsumDesc, ...], needed: frozenset[str]) -> Problem:
    """`build_problem`, cached; `needed` names the produced tensors read after the chain."""
    return build_problem(name, descs, lambda t: t in needed)


class IRChains:
    """Einsums of one function as tiling problems: tensors named by SSA value, and who reads what."""

    def __init__(self, func: FuncOp, values: dict[str, int]) -> None:
        from solar.passes.analysis.units import Uses

        self.values = values
        self.uses = Uses.of(func)
        self._names: dict[Value, str] = {}
        self._taken: set[str] = set()

    def name(self, v: Value) -> str:
        if v not in self._names:
            base, n = v.name, 1
            candidate = base
            while candidate in self._taken:  # names are unique per function, but be safe across regions
                n += 1
                candidate = f"{base}.{n}"
            self._taken.add(candidate)
            self._names[v] = candidate
        return self._names[v]

    def piece(self, ops: Sequence[EinsumOp]) -> tuple[tuple[EinsumDesc, ...], frozenset[str]]:
        """The descriptions of a chain of einsums and the results needed after it (read by any op
        outside it, or by nothing at all: a result nobody reads is still written)."""
        inside = set(ops)
        descs = []
        for op in ops:
            d = desc_of(op, self.values)
            inputs = tuple((self.name(b.value), label, shape, size)
                           for b, (_, label, shape, size) in zip(op.inputs, d.inputs, strict=True))
            descs.append(EinsumDesc(d.name, d.spec, inputs, (self.name(op.results[0]), *d.output[1:]), d.where))
        needed = frozenset(self.name(op.results[0]) for op in ops
                           if not self.uses.of_value(op.results[0])
                           or any(r not in inside for r in self.uses.of_value(op.results[0])))
        return tuple(descs), needed

    def solve(self, name: str, ops: Sequence[EinsumOp], capacity: float,
              lower: bool = False) -> tuple[Mapping | None, str]:
        """The least-traffic fused mapping of a chain (one einsum: its own mapping), or None and why. With
        `lower`, a chain no mapping of which fits gets its least traffic at the smallest buffer it runs in
        (`Space.solve_lower`)."""
        descs, needed = self.piece(ops)
        try:
            self.check_views(ops)
            problem = problem_of(name, descs, needed)
        except Unfusable as err:
            return None, str(err)
        space = space_of(problem)
        m = space.solve_lower(capacity) if lower else space.solve(capacity)
        return m, "" if m is not None else "no tiling fits the buffer"

    def check_views(self, ops: Sequence[EinsumOp]) -> None:
        """Raises Unfusable where views (reshape, permute, slice, broadcast) connect the chain's einsums, or
        alias two of its inputs: a view costs nothing and its readers read the tensor it views (docs/sol.md),
        but the tiling problem names tensors by value, so it would move the tensor again."""
        from solar.passes.analysis.units import VIEW_OPS

        def base(v: Value) -> tuple[Value, bool]:
            viewed = False
            while isinstance(v.owner, VIEW_OPS) and v.owner.operands:
                v, viewed = v.owner.operands[0], True
            return v, viewed

        made = {op.results[0] for op in ops}
        bases: dict[Value, Value] = {}
        for op in ops:
            for b in op.inputs:
                root, viewed = base(b.value)
                if viewed and root in made:
                    raise Unfusable(f"'{b.value.name}' is a view of '{root.name}', which the chain makes: views "
                                    "between einsums are not modelled")
                if bases.setdefault(root, b.value) is not b.value:
                    raise Unfusable(f"'{b.value.name}' and '{bases[root].name}' view one tensor: reads through "
                                    "views of one tensor are not modelled")

    def space(self, name: str, ops: Sequence[EinsumOp]) -> Space:
        descs, needed = self.piece(ops)
        return space_of(problem_of(name, descs, needed))


@dataclass
class GroupResult:
    """A chain (a solar.group, or the einsums of one kernel) under one buffer, three ways: fused as a
    whole (intermediates stay on chip when their tiles fit), each unit (kernel) fused on its own, and
    each einsum on its own (intermediates through DRAM). Its traffic is the least of them."""

    name: str
    capacity: float
    fused: Mapping | None
    fused_why: str
    per_unit: float | None
    per_einsum: float | None

    @property
    def options(self) -> dict[str, float]:
        out = {"fused": self.fused.traffic if self.fused is not None else None, "per-unit": self.per_unit,
               "per-einsum": self.per_einsum}
        return {k: v for k, v in out.items() if v is not None}

    @property
    def traffic(self) -> float | None:
        return min(self.options.values()) if self.options else None

    @property
    def strategy(self) -> str:
        return min(self.options, key=lambda k: self.options[k]) if self.options else "none"

    @property
    def saving(self) -> float | None:
        """Bytes the best strategy saves over the per-einsum bound."""
        if self.per_einsum is None or self.traffic is None:
            return None
        return self.per_einsum - self.traffic


def group_result(chains: IRChains, name: str, units: Sequence[Sequence[EinsumOp]], capacity: float,
                 lower: bool = False) -> GroupResult:
    """`lower`: for a lower bound (the cache-aware SOL mode): see `IRChains.solve`."""
    einsums = [op for u in units for op in u]
    fused, why = chains.solve(name, einsums, capacity, lower) if len(einsums) > 1 else (None, "a single einsum")

    def total(pieces: Sequence[Sequence[EinsumOp]]) -> float | None:
        out = 0.0
        for k, piece in enumerate(pieces):
            m, _ = chains.solve(f"{name}.{k}" if len(piece) > 1 else piece[0].symbol, piece, capacity)
            if m is None and len(piece) > 1:  # a kernel's chain that cannot be fused: its einsums alone
                sub = total([[op] for op in piece])
                if sub is None:
                    return None
                out += sub
                continue
            if m is None:
                return None
            out += m.traffic
        return out

    per_unit = total(units) if len(units) > 1 and any(len(u) > 1 for u in units) else None
    per_einsum = total([[op] for op in einsums])
    if len(einsums) == 1:
        fused, _ = chains.solve(einsums[0].symbol, einsums, capacity, lower)
    return GroupResult(name, capacity, fused, why, per_unit, per_einsum)


def einsum_units(ops: Sequence[Op]) -> list[list[EinsumOp]] | None:
    """The units (kernels) of a group or unit as einsum lists; None when one of them is not einsums."""
    from solar.passes.analysis.units import units_of

    units = []
    for unit in units_of(list(ops)):
        if unit.kind != "einsum" or not all(isinstance(op, EinsumOp) for op in unit.ops):
            return None
        units.append([op for op in unit.ops if isinstance(op, EinsumOp)])
    return units


# ---- buffer sizes -----------------------------------------------------------------------------------

KIB = 1024
# The curve: 20 sizes, evenly spaced in log from 64 KiB to 256 MiB (as Orojenesis draws it).
CURVE_BUFFERS = tuple((round(64 * KIB * (256 * KIB * KIB / (64 * KIB)) ** (k / 19))) for k in range(20))
_UNITS = {"": 1, "b": 1, "kb": 1000, "kib": KIB, "mb": 1000**2, "mib": KIB**2, "gb": 1000**3, "gib": KIB**3}


def resolve_buffer(spec: str, target: Any) -> float:
    """`l2` (the target's L2), `smem` (shared memory per SM × SMs) or a size such as 1048576, 512KiB, 50MB.
    Raises ValueError for a bad size and the target's TargetError when it lacks the figure."""
    text = spec.strip().lower()
    if text == "l2":
        return float(target.l2_bytes)
    if text == "smem":
        return float(target.shared_memory_total)
    num = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = text[len(num):].strip()
    try:
        value = float(num)
    except ValueError:
        value = -1.0
    if unit not in _UNITS or value <= 0:
        raise ValueError(f"bad buffer '{spec}': write l2, smem or a size such as 1048576, 512KiB or 50MB")
    return value * _UNITS[unit]


def curve(solve: Callable[[float], float | None], buffers: Sequence[float] = CURVE_BUFFERS) -> list[float | None]:
    """Least traffic at each buffer size (ascending), monotone non-increasing: a mapping that fits a
    buffer fits every larger one, so each point is at most the previous one (the running minimum also
    absorbs the solver's tie tolerance)."""
    out: list[float | None] = []
    best: float | None = None
    for c in sorted(buffers):
        t = solve(c)
        if t is not None and (best is None or t < best):
            best = t
        out.append(best)
    return out


def describe(m: Mapping, space: Space) -> dict[str, Any]:
    """The chosen tiling as IR attribute values (docs/tiling.md, "On the IR"): the buffer, the least
    traffic and the compulsory traffic in bytes, the peak buffer use, the tile of every index, the
    tiled loops outside-in, and per operand how many times its slab is loaded."""
    from solar.ir.ops import Word

    return {
        "buffer": int(m.capacity),
        "traffic": round(m.traffic),
        "compulsory": int(m.compulsory),
        "peak": int(m.peak),
        "tiles": {u: m.tiles[u] for u in space.indices},
        "order": [Word(u) for u in m.order],
        "loads": {label.replace(".", "_"): m.loads(label, space.extent) for label in m.tiled},
    }


# ---- the cache-aware SOL mode -----------------------------------------------------------------------


@dataclass
class CacheAware:
    """The cache-aware mode of one target: per fusion group (a unit outside every group is its own),
    the least traffic under the buffer, kept between the fused (infinite buffer) and unfused bytes."""

    buffer: float
    label: str
    works: list[Any]  # Work per group, its bytes the cache-aware ones
    originals: list[Any]  # the CostModel's Work of each group, in the same order
    rows: list[dict[str, Any]]  # per group: name, bytes, fused_bytes, unfused_bytes, tiled_bytes, strategy
    mode: Any = None  # ModeResult


def cache_aware(model: Any, capacity: float, label: str) -> CacheAware:
    """Cache-aware bytes of every group of a CostModel (docs/sol.md, "Cache-aware mode").

    A group is priced by a tiling of the group as a whole (intermediates on chip). Where none is found
    (the mapping space cannot express the group, no tiling fits, the group holds loop nests), it is priced
    at its fused bytes, with the reason: its kernels tiled one by one are a schedule that runs, and pricing
    by it could put the bound above a better schedule the model cannot express. Those per-unit and
    per-einsum figures stay in the rows as information (`schedules`); where the whole-group tiling exists
    they also enter the least, so the bound is never above a schedule the model knows."""
    from solar.ir.ops import GroupOp

    chains = IRChains(model.func, model.values)
    works, rows = [], []
    for w in model.groups:
        members = [o for o in (w.ops[0].body if w.kind == "group" and isinstance(w.ops[0], GroupOp) else w.ops)
                   if o.opname != "solar.yield"]
        inside = {o for m in members for o in m.walk()}
        unfused = sum(u.bytes for u in model.units if u.ops and all(o in inside for o in u.ops)) or w.bytes
        units = einsum_units(members) if w.kind in ("group", "einsum") else None
        res: GroupResult | None = None
        reason: str | None = "kernels that stay loop nests or data-moving ops are not tiled"
        if units:
            try:
                res = group_result(chains, w.name.lstrip("@"), units, capacity, lower=True)
                reason = None if res.fused is not None else f"no tiling of the group as a whole: {res.fused_why}"
            except Exception as err:  # a construct the tiling model does not cover keeps the fused bytes
                reason = f"not modelled: {err}"
        tiled = res.traffic if res is not None and res.fused is not None else None
        # Between the fused bytes (an infinite buffer) and the unfused ones (which price every kernel at its
        # compulsory traffic, as if each had an unbounded buffer of its own): docs/sol.md says why.
        chosen = w.bytes if tiled is None else max(w.bytes, min(tiled, unfused))
        works.append(dataclasses.replace(w, bytes=chosen))

        def scaled(x: float | None, trips: int = w.trips) -> int | None:
            return None if x is None else round(x * trips)

        rows.append({"name": w.name, "bytes": round(chosen * w.trips), "fused_bytes": round(w.bytes * w.trips),
                     "unfused_bytes": round(unfused * w.trips), "tiled_bytes": scaled(tiled),
                     "whole_group_bytes": scaled(res.fused.traffic if res is not None and res.fused else None),
                     "strategy": res.strategy if tiled is not None and res is not None else "fused bytes",
                     "reason": reason,
                     "schedules": {"per_unit_bytes": scaled(res.per_unit if res else None),
                                   "per_einsum_bytes": scaled(res.per_einsum if res else None)}})
    return CacheAware(capacity, label, works, list(model.groups), rows)
