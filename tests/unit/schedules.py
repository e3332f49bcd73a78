"""Explicit tiled schedules of a chain of einsums, replayed on a fully associative buffer, to count the
DRAM traffic a real run of each schedule moves (the schedule check of docs/sol.md, "Why these are lower
bounds").

A chain is a list of `EinsumDesc` whose index letters are global (the same letter is the same index in every
step, as the test chains write them). A schedule is a loop over tiles of the shared indices (every einsum
inside it, one after the other, each with its own loop over tiles of its private indices), or the kernels
one by one (each its own loop nest, tensors between them through the buffer and DRAM). Each tile's body is
one access batch: every element its operands touch in that tile is read, its results' elements written
(a partial sum read back when an earlier tile of its reduction already wrote it). The buffer keeps the
batch's elements and loads what it lacks, evicting under Belady's policy (the element needed furthest in
the future, one never needed again first): the best any replacement can do for the schedule.

Traffic, in bytes: each load of an element missing from the buffer, each write-back of a dirty element that
is evicted while still needed (an intermediate read later, or a result of the chain), and the results left
dirty at the end. An intermediate evicted after its last use is dropped (a kernel never writes it out).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from solar.backends.tiling_problem import EinsumDesc
from solar.ir.einsum_spec import index_ranges, parse_spec, parse_where
from solar.ir.expr import Binary, linear_form


@dataclass(frozen=True)
class _Step:
    desc: EinsumDesc
    indices: tuple[str, ...]
    terms: tuple[tuple[tuple[dict[str, int], int], ...], ...]  # per operand then the result: per dim (coeffs, const)
    where: tuple[tuple[dict[str, int], int, str], ...]  # (coeffs, const, op) of `Σ c·u + const  op  0`
    reduced: frozenset[str]


def _affine(e: object) -> tuple[dict[str, int], int]:
    form = linear_form(e)  # type: ignore[arg-type]
    assert form is not None, e
    return {n[1:]: c for n, c in form[0]}, form[1]


def _steps(descs: Sequence[EinsumDesc]) -> tuple[list[_Step], dict[str, int]]:
    steps, extents = [], {}
    for d in descs:
        spec = parse_spec(d.spec)
        where = parse_where(d.where, spec.indices) if d.where else []
        shapes = [s for _, _, s, _ in d.inputs] + [d.output[2]]
        ranges = {k: int(v) for k, v in index_ranges(spec, shapes, where).items()}  # type: ignore[call-overload]
        for u, n in ranges.items():
            assert extents.setdefault(u, n) == n, f"letter {u} has two extents"
        terms = tuple(tuple(_affine(e) for e in term) for term in [*spec.inputs, spec.output])
        conds = []
        for c in where:
            coeffs, const = _affine(Binary("-", c.lhs, c.rhs))
            conds.append((coeffs, const, c.op))
        steps.append(_Step(d, tuple(spec.indices), terms, tuple(conds), frozenset(spec.reduced)))
    return steps, extents


@dataclass(frozen=True)
class Schedule:
    """A loop nest over tiles: `tiles` per index; `shared` the order of the loops all steps share (outer
    first), `private` each step's order of its own loops; `fused` False runs the kernels one by one (each
    step's loops in `shared + private` order)."""

    tiles: dict[str, int]
    shared: tuple[str, ...]
    private: tuple[tuple[str, ...], ...]
    fused: bool = True
    name: str = ""


class Chain:
    """A chain of einsums with concrete sizes, its tensors and schedules."""

    def __init__(self, descs: Sequence[EinsumDesc], needed: frozenset[str] | None = None) -> None:
        self.descs = list(descs)
        self.steps, self.extent = _steps(descs)
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.itemsize: dict[str, int] = {}
        for d in descs:
            for t, _, shape, size in (*d.inputs, d.output):
                self.shapes[t], self.itemsize[t] = tuple(shape), size
        produced = {d.output[0] for d in descs}
        read = {t for d in descs for t, *_ in d.inputs}
        self.results = needed if needed is not None else frozenset(produced - read)
        self.intermediates = frozenset(produced - self.results)
        common = set(self.steps[0].indices)
        for s in self.steps[1:]:
            common &= set(s.indices)
        self.common = tuple(u for u in self.steps[0].indices if u in common)

    # -- traces -------------------------------------------------------------------------------------------
    def _tile_batches(self, k: int, box: dict[str, tuple[int, int]], order: Sequence[str], tiles: dict[str, int],
                      visited: set[tuple[str, int]]) -> Iterator[list[tuple[str, np.ndarray, bool]]]:
        """The access batches of step k over `box` (index → [lo, hi)), its loops in `order` tiled."""
        step = self.steps[k]
        ranges = [range(box[u][0], box[u][1], tiles[u]) if u in order else [box[u][0]] for u in order]
        for starts in itertools.product(*ranges):
            sub = dict(box)
            for u, lo in zip(order, starts, strict=True):
                sub[u] = (lo, min(lo + tiles[u], box[u][1]))
            grids = np.meshgrid(*(np.arange(*sub[u]) for u in step.indices), indexing="ij")
            point = {u: g.ravel() for u, g in zip(step.indices, grids, strict=True)}
            keep = np.ones(next(iter(point.values())).shape, dtype=bool) if point else np.ones(1, dtype=bool)
            for coeffs, const, op in step.where:
                v = const + sum(c * point[u] for u, c in coeffs.items())
                keep &= {"<": v < 0, "<=": v <= 0, ">": v > 0, ">=": v >= 0, "==": v == 0}[op]
            batch: list[tuple[str, np.ndarray, bool]] = []
            operands = [(t, term) for (t, *_), term in zip(step.desc.inputs, step.terms, strict=False)]
            for t, term in operands:
                batch.append((t, self._flat(t, term, point, keep), False))
            out = step.desc.output[0]
            flat = self._flat(out, step.terms[-1], point, keep)
            if step.reduced:  # partial sums: read back where an earlier tile already wrote them
                keys = [(out, e) for e in flat.tolist()]
                before = np.array([key in visited for key in keys], dtype=bool)
                batch.append((out, flat[before], False))
                visited.update(keys)
            batch.append((out, flat, True))
            yield batch

    def _flat(self, t: str, term: tuple[tuple[dict[str, int], int], ...], point: dict[str, np.ndarray],
              keep: np.ndarray) -> np.ndarray:
        shape = self.shapes[t]
        n = int(keep.sum())
        flat = np.zeros(n, dtype=np.int64)
        for (coeffs, const), size in zip(term, shape, strict=True):
            v = np.full(n, const, dtype=np.int64) + sum((c * point[u][keep] for u, c in coeffs.items()),
                                                        np.zeros(n, dtype=np.int64))
            flat = flat * size + v
        return np.unique(flat)

    def batches(self, sched: Schedule) -> list[list[tuple[str, np.ndarray, bool]]]:
        out: list[list[tuple[str, np.ndarray, bool]]] = []
        whole = {u: (0, n) for u, n in self.extent.items()}
        visited: set[tuple[str, int]] = set()
        if not sched.fused:
            for k, step in enumerate(self.steps):
                order = [u for u in (*sched.shared, *sched.private[k]) if u in step.indices]
                out.extend(self._tile_batches(k, whole, order, sched.tiles, visited))
            return out
        ranges = [range(0, self.extent[u], sched.tiles[u]) for u in sched.shared]
        for starts in itertools.product(*ranges):
            box = dict(whole)
            for u, lo in zip(sched.shared, starts, strict=True):
                box[u] = (lo, min(lo + sched.tiles[u], self.extent[u]))
            for k in range(len(self.steps)):
                out.extend(self._tile_batches(k, box, sched.private[k], sched.tiles, visited))
        return out

    def working_set(self, batches: list[list[tuple[str, np.ndarray, bool]]]) -> int:
        """The most bytes one tile's batch touches: the buffer a schedule needs to run at all."""
        most = 0
        for batch in batches:
            per: dict[str, set[int]] = {}
            for t, elems, _ in batch:
                per.setdefault(t, set()).update(elems.tolist())
            most = max(most, sum(self.itemsize[t] * len(e) for t, e in per.items()))
        return most

    # -- the replay ---------------------------------------------------------------------------------------
    def replay(self, sched: Schedule, capacity: float,
               batches: list[list[tuple[str, np.ndarray, bool]]] | None = None) -> float:
        """DRAM bytes of the schedule on a buffer of `capacity` bytes under Belady's policy (evict the element
        needed furthest in the future; one never needed again first): see the module's docstring."""
        batches = self.batches(sched) if batches is None else batches
        wanted: list[dict[tuple[str, int], tuple[bool, bool]]] = []  # per batch: element -> (read, written)
        for batch in batches:
            w: dict[tuple[str, int], tuple[bool, bool]] = {}
            for t, elems, write in batch:
                for e in elems.tolist():
                    r, x = w.get((t, e), (False, False))
                    w[(t, e)] = (r or not write, x or write)
            wanted.append(w)
        upcoming: dict[tuple[str, int], float] = {}
        following: list[dict[tuple[str, int], float]] = [{} for _ in batches]
        for b in range(len(batches) - 1, -1, -1):
            for key in wanted[b]:
                following[b][key] = upcoming.get(key, math.inf)
            for key in wanted[b]:
                upcoming[key] = b
        dirty: dict[tuple[str, int], bool] = {}  # the buffer: element -> dirty
        due: dict[tuple[str, int], float] = {}  # element -> its next use
        heap: list[tuple[float, tuple[str, int]]] = []
        used, traffic = 0.0, 0.0
        for b, w in enumerate(wanted):
            for key in w:  # this tile's elements are due now: never evicted for it
                due[key] = b
            for key, (read, write) in w.items():
                if key not in dirty:
                    size = self.itemsize[key[0]]
                    while dirty and used + size > capacity:
                        _, old = heapq.heappop(heap)
                        if old not in dirty or due[old] == b:
                            if old in dirty:  # due now: keep it (the batch fits, so something else goes)
                                heapq.heappush(heap, (-math.inf, old))
                                continue
                            continue
                        if dirty.pop(old) and (old[0] in self.results or due[old] < math.inf):
                            traffic += self.itemsize[old[0]]  # written back: still needed
                        used -= self.itemsize[old[0]]
                    if read:
                        traffic += size  # loaded: an input, or a value written back earlier
                    dirty[key] = False
                    used += size
                dirty[key] = dirty[key] or write
            for key in w:
                due[key] = following[b][key]
                heapq.heappush(heap, (-due[key], key))
        traffic += sum(self.itemsize[k[0]] for k, d in dirty.items() if d and k[0] in self.results)
        return traffic

    # -- schedules ------------------------------------------------------------------------------------------
    def simple_schedules(self, sizes: Sequence[int] = (1, 2, 4)) -> list[Schedule]:
        """Fused schedules at several tile sizes: one loop over tiles of the shared indices (an index that a
        step reduces while a later step reads its result stays whole) in their order and reversed, every
        step inside it with its private indices whole; and the kernels one by one, each tiled likewise."""
        forced = set()
        for k, step in enumerate(self.steps):
            out = step.desc.output[0]
            if any(out in {t for t, *_ in s.desc.inputs} for s in self.steps[k + 1:]):
                forced |= step.reduced & set(self.common)
        free = [u for u in self.common if u not in forced]
        out = []
        for t in sizes:
            tiles = {u: (min(t, n) if u in free else n) for u, n in self.extent.items()}
            for order in dict.fromkeys((tuple(free), tuple(reversed(free)))):
                out.append(Schedule(tiles, order, tuple(() for _ in self.steps), True, f"fused t={t} {order}"))
            out.append(Schedule({u: min(t, n) for u, n in self.extent.items()}, (),
                                tuple(tuple(s.indices) for s in self.steps), False, f"one by one t={t}"))
        return out


def mapping_schedule(chain: Chain, mapping: object, space: object) -> Schedule:
    """The schedule of a MILP mapping (`Mapping` of `Space`): its tiles, its loop order (loops with more
    than one tile, outer first); shared loops outside, each step's private loops inside."""
    tiles = dict(mapping.tiles)  # type: ignore[attr-defined]
    for u, n in chain.extent.items():
        tiles.setdefault(u, n)
    order = list(mapping.order)  # type: ignore[attr-defined]
    shared = tuple(u for u in order if u in chain.common)
    private = tuple(tuple(u for u in order if u in s.indices and u not in chain.common) for s in chain.steps)
    return Schedule(tiles, shared, private, True, "milp")


def least_replay(chain: Chain, schedules: Sequence[Schedule], capacity: float) -> tuple[float, str]:
    """The least traffic among the schedules that run in the buffer (their tiles' batches fit)."""
    best = (math.inf, "")
    for s in schedules:
        batches = chain.batches(s)
        if chain.working_set(batches) <= capacity:
            best = min(best, (chain.replay(s, capacity, batches), s.name))
    return best
