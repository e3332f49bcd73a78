"""The tiling problem (docs/tiling.md, "The problem"): an einsum, or a fused chain of einsums, as steps over
global indices that read and write tensors through affine windows (`AccessDim` / `TensorAccess` / `Step` /
`Tensor` / `TilingProblem`), built from einsum descriptions (`EinsumDesc`, from the IR by `desc_of`) with exact
footprints from ISL (`build_problem`); and the vocabulary of its mapping space: tile `candidates`, the `Use`s
and on-chip `Slab`s of a space, and a `Mapping` (one evaluated point of it)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import islpy as isl

from solar.ir.analysis.isl_model import count, isl_expr
from solar.ir.einsum_spec import bind_where, index_ranges, parse_spec, parse_where
from solar.ir.expr import Binary, Expr, IndexRef, IntLit, free_indices, linear_form
from solar.ir.ops import EinsumOp, Value
from solar.ir.types import Dim

# ---- the problem ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AccessDim:
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
class TensorAccess:
    """How one step reads (or writes) one tensor; `exact` is the number of distinct in-bounds elements
    it touches over the step's whole domain (ISL), the compulsory traffic of this access."""

    tensor: str
    label: str  # the binding name in the einsum (A, W, Y)
    dims: tuple[AccessDim, ...]
    exact: int

    @property
    def indices(self) -> frozenset[str]:
        return frozenset(u for w in self.dims for u, _ in w.terms)


@dataclass(frozen=True)
class Step:
    """One einsum of a chain, over global index names (shared between steps through the tensors they
    exchange). `density`: the fraction of its iteration box inside its where-clause (padding guards
    excluded); 1.0 for a rectangular domain. `points`: its iteration points inside the whole where-clause
    with every access in bounds (padding taps excluded: the work any schedule must do; 0 where unknown).
    `fibres`: no where-clause constraint names a reduced index, so the reduction points of every result
    element form the whole box of the reduced indices."""

    name: str
    indices: tuple[str, ...]
    reads: tuple[TensorAccess, ...]
    write: TensorAccess
    density: float = 1.0
    points: int = 0
    fibres: bool = False


@dataclass(frozen=True)
class Tensor:
    name: str
    itemsize: int
    external: bool = True  # a produced tensor read after the chain (so written to DRAM)
    shared: bool = False  # an input several steps read through one access: one slab serves them all
    footprint: int = 0  # for a shared input: the distinct elements its readers touch together


@dataclass(frozen=True)
class TilingProblem:
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
    # Concrete shapes, so a where-clause's size parameters (`j<=CONTEXT`) take their values too.
    where = bind_where(op.where, parse_spec(op.spec).indices, values) if op.where else None
    return EinsumDesc(op.symbol, op.spec, inputs, output, where)


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
    points: int  # iteration points inside the whole where-clause whose accesses are all in bounds
    fibres: bool  # no where-clause constraint names a reduced index


def _step_model(desc: EinsumDesc) -> _StepModel:
    spec = parse_spec(desc.spec)
    where = parse_where(desc.where, spec.indices) if desc.where else []
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
    # An empty box (an index of extent 0, a zero-size tensor) does no work: no use or slab moves anything.
    density = 0.0 if any(ranges[i] == 0 for i in spec.indices) else 1.0
    if kept and density:
        dense = isl.Set(f"{{ E[{dims}] : {' and '.join(box + [isl_expr(c, names) for c in kept])} }}")
        points = count(dense, {}) or 0
        density = points / math.prod(ranges[i] for i in spec.indices)
    # The points whose every access is in bounds: the work a schedule cannot skip.
    inside = domain
    for k, (term, shape) in enumerate(zip(terms, shapes, strict=True)):
        if shape:
            space = f"T{k}[{', '.join(f'd{j}' for j in range(len(shape)))}]"
            target = " and ".join(f"0 <= d{j} < {d}" for j, d in enumerate(shape))
            access = isl.Map(f"{{ E[{dims}] -> T{k}[{', '.join(isl_expr(e, names) for e in term)}] }}")
            inside = inside.intersect(access.intersect_range(isl.Set(f"{{ {space} : {target} }}")).domain())
    reduced = set(spec.reduced)
    fibres = not any({r.name for side in (c.lhs, c.rhs) for r in free_indices(side)} & reduced
                     for c in where if not _is_range(c, ranges))
    return _StepModel(desc, ranges, terms, images, density, int(count(inside, {}) or 0), fibres)


def _is_range(c: Binary, ranges: dict[str, int]) -> bool:
    """`d<4` where d's range is 4: a constraint the box already keeps (it only gives the range)."""
    if not (isinstance(c.lhs, IndexRef) and isinstance(c.rhs, IntLit)) or c.lhs.name not in ranges:
        return False
    return (c.op, c.rhs.value) in (("<", ranges[c.lhs.name]), ("<=", ranges[c.lhs.name] - 1))


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


# Longer than most: the steps of matching a chain's tensors (producers and readers, on-chip exchanges, shared input
# slabs, global index names, windows) share one union-find and the steps' models; each step says what it does.
def build_problem(name: str, descs: Sequence[EinsumDesc],
                  read_after: Callable[[str], bool] | None = None) -> TilingProblem:
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

    def window(k: int, e: Expr, size: int) -> AccessDim:
        form = linear_form(e)
        if form is None:
            raise Unfusable(f"a subscript of @{descs[k].name} is not affine")
        terms = tuple((glob[(k, n[1:])], abs(c)) for n, c in form[0]
                      if n.startswith("%") and extent[glob[(k, n[1:])]] > 1)
        return AccessDim(terms, size, _values_in_bounds(e, models[k].ranges, size))

    steps = []
    tensors: dict[str, Tensor] = {}
    for k, (d, m) in enumerate(zip(descs, models, strict=True)):
        accesses = []
        for j, (t, label, shape, size) in enumerate(d.inputs):
            dims = tuple(window(k, e, n) for e, n in zip(m.entries[j], shape, strict=True))
            accesses.append(TensorAccess(t, label, dims, _card(m.images[j])))
            tensors.setdefault(t, Tensor(t, size))
        t, label, shape, size = d.output
        dims = tuple(window(k, e, n) for e, n in zip(m.entries[-1], shape, strict=True))
        write = TensorAccess(t, label, dims, _card(m.images[-1]))
        external = read_after(t) if read_after is not None else t not in readers
        tensors[t] = Tensor(t, size, external=external or t not in readers)
        indices = tuple(dict.fromkeys(glob[(k, i)] for i in m.ranges if m.ranges[i] > 1))
        steps.append(Step(d.name, indices, tuple(accesses), write, m.density, m.points, m.fibres))
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
    return TilingProblem(name, tuple((u, n) for u, n in extents if n > 1), tuple(steps), tuple(tensors.values()))


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
                   name: str = "einsum") -> TilingProblem:
    """A single einsum from subscripts and shapes (operands then result), for tests and benchmarks."""
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    inputs = tuple((letters[k], letters[k], tuple(s), itemsize) for k, s in enumerate(shapes[:-1]))
    output = ("Out", "Out", tuple(shapes[-1]), itemsize)
    return build_problem(name, [EinsumDesc(name, spec, inputs, output, where)])


def _is_prime(n: int) -> bool:
    """Miller-Rabin with the bases that are exact below 3.3e24 (every extent is below 2^63)."""
    if n < 2:
        return False
    bases = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41)
    for p in bases:
        if n % p == 0:
            return n == p
    d, r = n - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for a in bases:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _rho(n: int) -> int:
    """A nontrivial factor of the odd composite n (Pollard rho, Brent's variant)."""
    for c in range(1, n):
        y, m, g, r, q = 2, 128, 1, 1, 1
        x = ys = y
        while g == 1:
            x = y
            for _ in range(r):
                y = (y * y + c) % n
            k = 0
            while k < r and g == 1:
                ys = y
                for _ in range(min(m, r - k)):
                    y = (y * y + c) % n
                    q = q * abs(x - y) % n
                g = math.gcd(q, n)
                k += m
            r *= 2
        if g == n:
            g = 1
            while g == 1:
                ys = (ys * ys + c) % n
                g = math.gcd(abs(x - ys), n)
        if g != n:
            return g
    raise AssertionError(n)


def _factor(n: int) -> dict[int, int]:
    """The prime factorization of n >= 1: trial division by small primes, then Pollard rho."""
    out: dict[int, int] = {}
    for p in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47):
        while n % p == 0:
            out[p] = out.get(p, 0) + 1
            n //= p
    stack = [n] if n > 1 else []
    while stack:
        m = stack.pop()
        if _is_prime(m):
            out[m] = out.get(m, 0) + 1
        else:
            f = _rho(m)
            stack += [f, m // f]
    return out


def _divisors(n: int, limit: int) -> set[int] | None:
    """The divisors of n, or None where there are more than `limit` (fast for any n below 2^63)."""
    fac = _factor(n)
    if math.prod(e + 1 for e in fac.values()) > limit:
        return None
    divs = {1}
    for p, e in fac.items():
        divs = {d * p**k for d in divs for k in range(e + 1)}
    return divs


def candidates(n: int, fine: bool = True) -> tuple[int, ...]:
    """Tile sizes considered for an index of extent n: its divisors and the powers of two below it, and
    with `fine` also three times powers of two (a last partial tile is charged exactly): the 3·2^k sizes let
    a near-square tile plus its operands' slivers fill a power-of-two buffer. Where that exceeds 24 values,
    the divisors are kept only as the exact quotients n/2^k. Chains use the coarser set (docs/tiling.md)."""
    if n < 1:  # an index of extent 0 (an empty domain): one tile, moving nothing
        return (1,)
    grid = {m << k for m in ((1, 3) if fine else (1,)) for k in range(n.bit_length()) if (m << k) < n}
    divs = _divisors(n, 24)
    cands = grid | divs if divs is not None else set()
    if divs is None or len(cands) > 24:
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
    dims: tuple[AccessDim, ...]
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
    dims: tuple[AccessDim, ...]
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




# ---- the search budget ------------------------------------------------------------------------------


class SearchStopped(Exception):
    """The search of one tiling problem stopped before it proved its optimum: its time budget ran out, or
    its space needs more formulations than are ever tried. What it found is then no figure to rely on;
    callers fall back to a bound that holds for every schedule (docs/tiling.md, "The search budget")."""


class SpaceTooLarge(SearchStopped):
    """The space needs more formulations than are ever tried: every search of it stops so."""


@dataclass
class Budget:
    """CPU seconds of this process one tiling problem's search may take (a group's fused chain, one of its
    pieces, one einsum), from the moment it is made. `None` seconds: no limit. CPU time, not wall-clock
    time, so that other work on the machine does not change where a search stops, nor so its result."""

    seconds: float | None
    started_cpu: float = field(default_factory=time.process_time)
    started_wall: float = field(default_factory=time.perf_counter)

    def left(self) -> float:
        if self.seconds is None:
            return math.inf
        return self.seconds - (time.process_time() - self.started_cpu)

    def wall_limit(self) -> float:
        """The wall-clock time a solver call may take so that it stops near the CPU budget's end: what is
        left, stretched by how much slower than CPU time the wall clock has run so far (a loaded machine)."""
        cpu = time.process_time() - self.started_cpu
        wall = time.perf_counter() - self.started_wall
        return self.left() * max(1.0, wall / cpu if cpu > 0.01 else 1.0)

    def check(self, doing: str) -> None:
        """Raises SearchStopped once the budget is spent."""
        if self.left() <= 0:
            raise SearchStopped(f"the tiling search stopped at its budget of {self.seconds:g} s ({doing})")
