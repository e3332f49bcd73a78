"""Traffic a finite buffer forces on a global dependency (docs/design/tiling.md, "Global dependencies"): a reduction
over a fibre whose result is used again, element by element, across that fibre (batch norm in training after
a GEMM, layer and group norm, a softmax's normalisation). Every result element of the consumer needs both its
own element of the reduced tensor and the complete reduction of its fibre, so between the moment a fibre's
reduction completes and the moment its elements are consumed, every element of the fibre must be held
somewhere: in the buffer, in DRAM (a round trip), or not at all (recomputed, from the tensors it came from).

Two arguments, each a lower bound on the traffic beyond the compulsory one (each tensor that lives in DRAM
moved once), every schedule of the chain whatever its order, tiles, replacement policy or recomputation:

- **per fibre**: at the completion of fibre g, its n_f elements are produced and not yet consumed; at most
  C/b of them have a value in the buffer (b: the least element size); each other one is round-tripped
  (stored and loaded again: 2b), re-read from the DRAM tensor it is an elementwise image of (b of that
  tensor), or recomputed (priced at no bytes: a lower bound; its inputs may be shared with other elements).
  A round trip costs only the load where the value's tensor is itself a result (its store is compulsory).
  Extra ≥ Σ_g (n_f − C/b)⁺ · the least of those costs.
- **first completion** (the tiled re-reads): where the fibre's tensor is (an elementwise image of) the result
  of a contraction P reading a DRAM tensor A whose indices are the fibre's and P's reduced ones (X[b, k] of a
  GEMM X·W whose columns are normalised over the batch b), look at the moment t₁ the first fibre completes.
  Every slice f of the fibre (a row b) took part in it, so A's slice (the row X[b, :]) was loaded before t₁.
  Either every other fibre's element in that slice already has a value at t₁ (n_G − 1 of them, each in the
  buffer or round-tripped: 2b), or one of them is computed from scratch after t₁, which needs A's whole
  slice again (in the buffer or loaded again: b_A per element). A byte of buffer saves at most two bytes
  of either, so extra ≥ slices · min(2b·(n_G − 1), b_A·|A's slice|) − 2C.

The dependency is real only where the consumer's result keeps the fibre (it writes an element per reduced
element, through elementwise steps, to a result of the chain): a consumer that reduces over the fibre again
(the PV product after a softmax in attention) can be rewritten to consume each element early and correct the
sum later (online softmax), so it is left out.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import lru_cache

from solar.backends.tiling_problem import Step, TensorAccess, TilingProblem


@dataclass(frozen=True)
class Recompute:
    """Per fibre, elements made by a contraction that must each be round-tripped (`round_trip` bytes) or
    recomputed (`points` iteration points of the contraction `producer` each, run again): the cache-aware
    mode prices the split with the least time on the target (`tiling_ir.price_recompute`)."""

    producer: str
    elements: float
    round_trip: float
    points: float


@dataclass(frozen=True)
class GlobalDependency:
    """The largest forced traffic found: the reduction step, the tensor whose fibres it reduces, the reduced
    indices, the extra bytes and which argument gave them ("per fibre", "first completion"); `recompute`:
    the largest round-trip-or-recompute choice (elements of a contraction's result, per fibre), or None."""

    reduction: str
    tensor: str
    fibre: tuple[str, ...]
    extra: float
    argument: str
    recompute: Recompute | None = None


def _bare(a: TensorAccess, extent: dict[str, int]) -> bool:
    """Every dimension one index with coefficient 1, all indices distinct, every element touched once."""
    letters = [w.terms[0][0] for w in a.dims if len(w.terms) == 1 and w.terms[0][1] == 1]
    return (len(letters) == len(a.dims) == len(set(letters))
            and a.exact == math.prod(extent[u] for u in letters))


def _elementwise(s: Step, extent: dict[str, int]) -> bool:
    """A step that reduces nothing and writes one element per point (bias, scale, ReLU, a normalisation)."""
    return _bare(s.write, extent) and set(s.indices) == s.write.indices and s.density == 1.0


def _keeps_fibre(problem: TilingProblem, tensor: str, fibre: frozenset[str]) -> bool:
    """The tensor is a result of the chain, or is read whole by elementwise steps that keep the fibre's
    indices on the way to one: each of its elements reaches its own result element."""
    if problem.tensor(tensor).external:
        return True
    extent = problem.extent
    return any(_elementwise(s, extent) and fibre <= s.write.indices and s.write.tensor != tensor
               and any(a.tensor == tensor and _bare(a, extent) and fibre <= a.indices for a in s.reads)
               and _keeps_fibre(problem, s.write.tensor, fibre) for s in problem.steps)


def _dependents(problem: TilingProblem, tensor: str) -> set[str]:
    """The tensors computed from `tensor` inside the chain (itself included), through reads by bare letters
    (global indices: an element read at a point depends on the reduction of the fibre at that point's
    letters)."""
    extent = problem.extent
    out = {tensor}
    changed = True
    while changed:
        changed = False
        for s in problem.steps:
            if s.write.tensor not in out and any(a.tensor in out and _bare(a, extent) for a in s.reads):
                out.add(s.write.tensor)
                changed = True
    return out


def _lineage(problem: TilingProblem, tensor: str) -> tuple[list[str], Step | None]:
    """`tensor` and the tensors it is an elementwise, one-to-one image of, back to a DRAM tensor or to the
    step that makes the first of them some other way (a contraction: returned). Where a step has several
    one-to-one sources (a GEMM's output added to its broadcast bias), the first whose lineage reaches a
    contraction is followed: the element depends on each of them."""
    extent = problem.extent
    writer = {s.write.tensor: s for s in problem.steps}
    if tensor not in writer:
        return [tensor], None
    s = writer[tensor]
    if not _elementwise(s, extent):
        return [tensor], s
    sources = [a.tensor for a in s.reads if _bare(a, extent) and a.indices == s.write.indices and a.tensor != tensor]
    if not sources:
        return [tensor], None  # made from several tensors none of which is one-to-one: no source to reread
    lineages = [_lineage(problem, t) for t in dict.fromkeys(sources)]
    chain, producer = next((x for x in lineages if x[1] is not None), lineages[0])
    return [tensor, *chain], producer


def _per_fibre(problem: TilingProblem, lineage: list[str], fibre: frozenset[str], others: frozenset[str],
               capacity: float, least: int) -> float:
    """Σ over fibres of (n_f − C/b)⁺ times the least cost of an element not in the buffer: a round trip
    (2b), or a recomputation, which re-reads the DRAM tensor the element is a one-to-one image of (b of it)
    or, made some other way, is priced at no bytes."""
    extent = problem.extent
    n_f = math.prod(extent[u] for u in fibre)
    fibres = math.prod(extent[u] for u in others)
    source = lineage[-1]
    made = {s.write.tensor for s in problem.steps}
    recompute = 0.0 if source in made else float(problem.tensor(source).itemsize)
    return fibres * max(0.0, n_f - capacity / least) * min(_round_trip(problem, lineage, least), recompute)


def _round_trip(problem: TilingProblem, lineage: list[str], least: int) -> float:
    """The traffic beyond the compulsory one of keeping an element's value in DRAM: a store and a load (2b),
    or only the load where a tensor of its lineage is a result of the chain (its store is compulsory)."""
    made = {s.write.tensor for s in problem.steps}
    return float(least) if any(problem.tensor(t).external for t in lineage if t in made) else 2.0 * least


def _first_completion(problem: TilingProblem, lineage: list[str], producer: Step | None, fibre: frozenset[str],
                      others: frozenset[str], capacity: float, least: int) -> float:
    if producer is None:
        return 0.0
    extent = problem.extent
    made = {s.write.tensor for s in problem.steps}
    reduced = frozenset(producer.indices) - producer.write.indices
    if not (fibre | others) <= producer.write.indices or not reduced or producer.density != 1.0:
        return 0.0
    best = 0.0
    for a in producer.reads:
        if a.tensor in made or not _bare(a, extent) or not fibre <= a.indices or not a.indices <= fibre | reduced:
            continue
        slices = math.prod(extent[u] for u in fibre)
        slice_size = math.prod(extent[u] for u in a.indices & reduced)
        n_g = math.prod(extent[u] for u in others)
        per_slice = min(_round_trip(problem, lineage, least) * (n_g - 1),
                        float(problem.tensor(a.tensor).itemsize * slice_size))
        best = max(best, slices * per_slice - 2.0 * capacity)
    return best


@lru_cache(maxsize=4096)
def global_dependency(problem: TilingProblem, capacity: float) -> GlobalDependency | None:
    """The most extra traffic (bytes beyond the compulsory) any global dependency of the chain forces on a
    buffer of `capacity` bytes (the module's docstring), or None where none forces any."""
    if not math.isfinite(capacity) or capacity <= 0:
        return None
    extent = problem.extent
    least = min(t.itemsize for t in problem.tensors)
    best: GlobalDependency | None = None
    choice: tuple[GlobalDependency, Recompute] | None = None
    for rd in problem.steps:
        fibre = frozenset(rd.indices) - rd.write.indices
        if not fibre or not rd.fibres or rd.density != 1.0:
            continue
        later = _dependents(problem, rd.write.tensor)
        for t in {a.tensor for a in rd.reads if _bare(a, extent) and fibre <= a.indices}:
            access = next(a for a in rd.reads if a.tensor == t)
            others = access.indices - fibre
            consumers = [z for z in problem.steps if z is not rd and _elementwise(z, extent)
                         and fibre <= z.write.indices and _keeps_fibre(problem, z.write.tensor, fibre)
                         and any(a.tensor == t and a.indices == access.indices for a in z.reads)
                         and any(a.tensor in later and a.indices <= others for a in z.reads)]
            if not consumers:
                continue
            lineage, producer = _lineage(problem, t)
            for argument, extra in (
                    ("per fibre", _per_fibre(problem, lineage, fibre, others, capacity, least)),
                    ("first completion",
                     _first_completion(problem, lineage, producer, fibre, others, capacity, least))):
                if extra > 0 and (best is None or extra > best.extra):
                    best = GlobalDependency(rd.name, t, tuple(sorted(fibre)), extra, argument)
            if producer is not None and lineage[-1] == producer.write.tensor:
                excess = math.prod(extent[u] for u in others) * max(
                    0.0, math.prod(extent[u] for u in fibre) - capacity / least)
                if excess > 0 and (choice is None or excess > choice[1].elements):
                    rec = Recompute(producer.name, excess, _round_trip(problem, lineage, least),
                                    producer.points / max(producer.write.exact, 1))
                    choice = GlobalDependency(rd.name, t, tuple(sorted(fibre)), 0.0, "per fibre, recomputed"), rec
    if choice is not None:
        best = dataclasses.replace(best if best is not None else choice[0], recompute=choice[1])
    return best
