"""Cache-aware traffic: the least DRAM traffic of an einsum, or of a fused chain of einsums, on a two-level
machine (DRAM → an on-chip buffer of C bytes), over a documented space of tilings, found exactly with
`scipy.optimize.milp`. docs/tiling.md states the mapping space and the traffic model, docs/design/tiling.md
the formulation; the modules follow it section by section:

- the problem (`tiling_problem`): `AccessDim` / `TensorAccess` / `Step` / `Tensor` / `TilingProblem`, built from
  einsum descriptions (`EinsumDesc`, from the IR by `desc_of`) with exact footprints from ISL (`build_problem`);
- the space and its traffic model (here): `Space` (uses, on-chip slabs, tile candidates, `Space.evaluate`);
- the solvers: `Space.solve` (the MILP, `tiling_milp`) and `Space.brute_force` (enumeration over the same
  space, for tests);
- chains of the IR (`tiling_ir`): `group_result` (a fused group against its per-einsum bound) and `curve`.

Nothing in the MILP enumerates: loop orders are encoded as nested sets of tiled loops per operand, so the
formulation covers every order at once (docs/design/tiling.md, "What is enumerated, and why the result
is exact over the space").
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from solar.backends.tiling_milp import TIE, Formulation
from solar.backends.tiling_orders import Form, formulations
from solar.backends.tiling_problem import (
    AccessDim,
    Budget,
    Mapping,
    Slab,
    SpaceTooLarge,
    TilingProblem,
    Use,
    candidates,
)


class Space:
    """The mapping space of one problem (docs/tiling.md): tile sizes per index from `candidates`, one
    loop order over the shared indices and one over each step's private indices inside them, and per use
    a retention level (the set S of loops outside it). Traffic of a use = slab footprint × loads."""

    # Longer than most: the space's tables (uses, slabs, batch and forced loops, tile candidates) are derived in this
    # order, each from the ones before; each says why where it is made.
    def __init__(self, problem: TilingProblem) -> None:
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
        self._orders: list[Form] | None = None  # see `tiling_orders.formulations`
        self._stopped: str | None = None  # why this space's search cannot finish (too many formulations)
        self._forms: dict[int, Formulation] = {}  # by position in `_orders`, built when first solved
        self._wins: dict[int, int] = {}  # how often each order gave the optimum (tried first next time)
        self._found: list[Mapping] = []  # optima at other buffer sizes: incumbents for the next solve
        self._solved: dict[float, Mapping | None] = {}  # by buffer size
        self.factor_cache: dict[tuple[Any, ...], tuple[list[float], list[float]]] = {}  # see Formulation.groups
        self.point_cache: dict[tuple[Any, ...], list[float]] = {}  # see Formulation.exp_var

    # -- the traffic model ------------------------------------------------------------------------------
    def loads(self, tiles: dict[str, int], loops: Iterable[str]) -> int:
        return math.prod(-(-self.extent[u] // tiles[u]) for u in loops)

    def footprint(self, dims: tuple[AccessDim, ...], span: dict[str, int]) -> int:
        return math.prod(w.extent(span, self.extent) for w in dims)

    def span(self, tiles: dict[str, int], tiled: Iterable[str]) -> dict[str, int]:
        s = dict(self.extent)
        for u in tiled:
            s[u] = tiles[u]
        return s

    def components(self, dims: tuple[AccessDim, ...],
                   loops: Iterable[str]) -> list[tuple[tuple[str, ...], tuple[AccessDim, ...]]]:
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

    def group_traffic(self, idx: tuple[str, ...], windows: tuple[AccessDim, ...], tiles: dict[str, int | None],
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
    # Longer than most: the outer-approximation rounds over the orders share the incumbent, the bounds and the budget.
    def solve(self, capacity: float, time_limit: float = 20.0, budget: Budget | None = None) -> Mapping | None:
        """The least-traffic mapping that fits `capacity` bytes (scipy.optimize.milp); None if none fits.

        One formulation per nesting order of the uses (`tiling_orders.formulations`), built when first
        needed. Rounds of outer approximation run best-first over the orders (least lower bound first, the
        order that won last time to start with), each asking only for mappings better than the incumbent,
        until every order's bound reaches it. Solutions found at other buffer sizes that fit this one seed
        the incumbent. Raises SearchStopped when `budget` runs out first, or the space needs more
        formulations than are tried: then nothing is proven, and no mapping is returned."""
        if capacity in self._solved:
            return self._solved[capacity]
        resident = self.resident(capacity)
        if resident is not None:
            return resident
        best: Mapping | None = None
        for old in self._found:
            m = self.evaluate(old.tiles, old.tiled, capacity)
            if m is not None and (best is None or m.traffic < best.traffic):
                best = m
        for tiles, tiled in self.seeds():
            m = self.evaluate(tiles, tiled, capacity)
            if m is not None and (best is None or m.traffic < best.traffic):
                best = m
        orders: list[Form] = []
        if best is None or best.traffic > self.compulsory * (1 + TIE):  # else nothing beats it: no formulation
            orders = self.formulations(budget)
        proven = True
        winner: int | None = None
        # Without history, formulations where results nest inside operands go first (the positions of
        # written uses in the order, earlier: smaller sets): results retained longest (output-stationary)
        # is what usually wins, and a good first incumbent lets the others stop at the root. The order is
        # only a priority; every formulation is still bounded.
        heap = [(-math.inf, (-self._wins.get(k, 0), sum(p for p, i in enumerate(o) if self.uses[i].write)), k)
                for k, (o, _) in enumerate(orders)]
        heapq.heapify(heap)
        while heap:
            bound, wins, k = heapq.heappop(heap)
            cutoff = best.traffic * (1 - TIE) if best is not None else math.inf
            if bound >= cutoff or (best is not None and best.traffic <= self.compulsory * (1 + TIE)):
                break  # no order can beat the incumbent (nor can anything beat the compulsory traffic)
            if budget is not None:
                budget.check(f"{len(heap) + 1} of {len(orders)} formulations open")
            if k not in self._forms:
                self._forms[k] = Formulation(self, *orders[k])
            limit = time_limit if budget is None else max(0.05, min(time_limit, budget.wall_limit()))
            status, m, bound = self._forms[k].round(capacity, cutoff, limit)
            if m is not None and m.peak <= capacity * (1 + 1e-9) and (best is None or m.traffic < best.traffic):
                best, winner = m, k
            if status == "fail" and budget is not None:
                budget.check("a solve ran out of time")
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

    def formulations(self, budget: Budget | None) -> list[Form]:
        """This space's formulations, enumerated once; a space with too many to try stops every search."""
        if self._stopped is not None:
            raise SpaceTooLarge(self._stopped)
        if self._orders is None:
            try:
                self._orders = formulations(self, budget)
            except SpaceTooLarge as err:
                self._stopped = str(err)
                raise
        return self._orders

    def seeds(self) -> list[tuple[dict[str, int], dict[str, frozenset[str]]]]:
        """A few loop-nest schedules to start the search from, cheap to evaluate: every tile smallest or
        largest, or all but one index so; the loops in the order of the indices or its reverse, and each
        use loaded inside the innermost tiled loop it depends on (its set: the loops out to there, a
        retention level of that order, as `assignments` enumerates them for the brute force). An
        elementwise einsum or a norm's last step usually reaches the compulsory traffic with one of them,
        and then no MILP runs (nothing beats the compulsory traffic); otherwise the best is the incumbent
        the MILP must improve on, which changes no optimum."""
        small = {u: self.cands[u][0] for u in self.indices}
        large = {u: self.cands[u][-1] for u in self.indices}
        tile_sets = [small, large, *({**small, u: large[u]} for u in self.indices),
                     *({**large, u: small[u]} for u in self.indices)]
        reads = {use.label: {v for w in use.dims for v, _ in w.terms} for use in self.uses}
        def ordered(loops: Sequence[str], flip: bool) -> list[str]:
            return list(loops[::-1] if flip else loops)

        out = []
        for tiles in tile_sets:
            for flip in (False, True):
                tiled = {}
                for use in self.uses:
                    # As `assignments` builds them: a prefix of the shared loops, then the step's own.
                    seq = ordered(self.hstar, flip) + ([] if use.step is None else
                                                       ordered(self.private[use.step], flip))
                    last = max((k for k, v in enumerate(seq) if v in reads[use.label] and tiles[v] < self.extent[v]),
                               default=-1)
                    tiled[use.label] = frozenset(seq[:last + 1])
                out.append((tiles, tiled))
        return out

    def least_peak(self) -> int:
        """The smallest buffer any mapping of the space runs in: every tile 1 (forced indices whole) and
        every loop outside every use's slab. Slabs only shrink with smaller tiles and more tiled loops."""
        tiles = {u: self.cands[u][0] if u not in self.forced else self.extent[u] for u in self.indices}
        m = self.evaluate(tiles, {u.label: frozenset(u.free) for u in self.uses})
        assert m is not None
        return m.peak

    def solve_lower(self, capacity: float, budget: Budget | None = None) -> Mapping | None:
        """`solve`, and where no mapping fits `capacity`, the least traffic at the smallest buffer where one
        runs (`least_peak`): no schedule moves less with a smaller buffer, so it is still a lower bound, and
        the traffic never increases with the buffer size."""
        m = self.solve(capacity, budget=budget)
        if m is None:
            least = self.least_peak()
            if least > capacity:
                m = self.solve(float(least), budget=budget)
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

    # Longer than most: an exhaustive check for tests and the benchmark's ratio, vectorized over the tile grid; its
    # caches and loops share one enumeration.
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


