"""A lower bound on the DRAM traffic of every schedule of a tiling problem on a buffer of C bytes, not only of
the schedules of the mapping space (docs/tiling.md, "A bound for every schedule";
docs/design/tiling.md, "The segment bound"): the segment argument of
Hong and Kung, with the number of iteration points a segment can run bounded by Shearer's lemma.

Cut any run into segments, each closed as soon as it has moved C bytes between DRAM and the buffer. A
segment touches at most 3C + b bytes of the tensors that live in DRAM (b: the largest element): what the
buffer holds when it starts (≤ C), what it moves (< C + b), what the buffer holds when it ends (≤ C), since
an input element it uses was there or was loaded, and a result element it updates was there, was loaded,
or is still there or was written out. Shearer's lemma (the discrete Brascamp–Lieb inequality for coordinate
projections) bounds the iteration points E of one einsum whose accesses touch x_j elements of tensor j:
|E| ≤ Π_j x_j^{s_j} for every weight vector s ≥ 0 that covers each index (Σ of s_j over the accesses that
use the index ≥ 1). So a segment runs at most F(3C + b) points of each einsum, a run needs at least
K = max over einsums ⌈points / F⌉ segments, and all but the last move C bytes: traffic ≥ C·(K − 1).
Segments of R bytes of traffic instead of C touch at most X = 2C + R + b bytes: traffic ≥ R·(K(X) − 1), and
the best R counts (for a matmul, R = 4C: 1.41·MNK/√C elements against the 2·MNK/√C of the best tiling).

A step whose result is written out (or is an intermediate that counts like a result, `_counted`) is cut
instead by loads and *births* of its result elements (the first update of each partial sum that reaches the
results; each result element is born once and stored at least once, so loads + births ≤ traffic): a segment
then touches at most X = C + R + b bytes, the end of the segment costing nothing, and R = 2C gives a
matmul's tight 2·MNK/√S − 2S (Smith, Lowery, Langou and van de Geijn; S = C/b elements).

Windows (`p + r`) are not coordinate projections: the points are sliced by the window's minor indices (each
slice sees a coordinate projection, and there are Π extents of them), or the windowed tensor is left out,
or (Demmel and Dinh's credit for a window's reuse) the windowed tensor is joined to its minor indices: its
element and r give p, so x elements of it stand for at most x·R points of the coordinate projection onto
(p, r), and a convolution's |E| ≤ √(x_X·R·S · x_W · x_Y) instead of R·S·√(x_X·x_W·x_Y); the least F of
the three counts. Tensors made and used inside a chain are left out (a segment may make as
many as it likes).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from solar.backends.tiling_problem import Step, TensorAccess, TilingProblem

GRID = 1.03  # ratio between the budgets X tried (each gives a bound; the most counts)
WEIGHTS = (0.0, 1 / 3, 0.5, 2 / 3, 1.0)  # Shearer weights tried per tensor (fewer where there are many)


@dataclass(frozen=True)
class _Projection:
    """One tensor access of one slice as a coordinate projection: the indices it depends on, the most
    distinct elements it can touch, and bytes per element (0 for an index's own range, which costs none)."""

    indices: frozenset[str]
    cap: float
    itemsize: float


@dataclass(frozen=True)
class _Relaxation:
    """Points of a step against touched bytes: |E| ≤ factor · Π x_j^{s_j} over `projections`."""

    points: int
    factor: float  # the number of slices
    projections: tuple[_Projection, ...]
    weights: np.ndarray  # rows: weight vectors s that cover every index (one per row), over `projections`

    def most_points(self, budget: np.ndarray) -> np.ndarray:
        """The most points a set touching at most `budget` bytes of the projected tensors can hold (an upper
        bound, from the best weight vector at each budget; at least 1 and at most the step's points)."""
        caps = np.array([p.cap for p in self.projections])
        sizes = np.array([p.itemsize for p in self.projections], dtype=float)
        best = np.full(budget.shape, math.inf)
        for s in self.weights:
            best = np.minimum(best, _weighted_log_max(s, caps, sizes, budget))
        return np.clip(self.factor * np.exp(best), 1.0, float(self.points))


def _weighted_log_max(s: np.ndarray, caps: np.ndarray, sizes: np.ndarray, budget: np.ndarray) -> np.ndarray:
    """max Σ s_j log x_j subject to Σ sizes_j x_j ≤ budget and x_j ≤ caps_j, for each budget: water-filling,
    x_j = min(cap_j, λ s_j / size_j) for the tensors with a weight (an index's own range sits at its cap)."""
    free = sizes == 0
    out = np.full(budget.shape, float(np.sum(s[free] * np.log(caps[free]))))
    live = (s > 0) & ~free
    if not live.any():
        return out
    ls, lc, lb = s[live], caps[live], sizes[live]
    order = np.argsort(lc * lb / ls)  # the order in which the tensors reach their caps as λ grows
    ls, lc, lb = ls[order], lc[order], lb[order]
    n = len(ls)
    turn = lc * lb / ls
    capped = np.concatenate(([0.0], np.cumsum(lc * lb)))  # bytes of the first k tensors at their caps
    rest = np.concatenate((np.cumsum(ls[::-1])[::-1], [0.0]))  # Σ weights of tensors k.. (each spends λ s_j)
    k = np.searchsorted(capped[:-1] + turn * rest[:-1], budget, side="right")  # tensors at their caps
    lam = (budget - capped[k]) / np.where(rest[k] > 0, rest[k], 1.0)
    for j in range(n):
        x = np.where(k > j, lc[j], np.maximum(lam * ls[j] / lb[j], 1e-300))
        out = out + ls[j] * np.log(x)
    return out


def _weights(projections: tuple[_Projection, ...], indices: frozenset[str]) -> np.ndarray:
    """Weight vectors over the projections that cover every index: each tensor's weight from WEIGHTS (0, 1/2
    or 1 where there are many), each index's own range weighted just enough to complete the cover."""
    tensors = [k for k, p in enumerate(projections) if p.itemsize > 0]
    own = {next(iter(p.indices)): k for k, p in enumerate(projections) if p.itemsize == 0}
    choices = WEIGHTS if len(tensors) <= 3 else (0.0, 0.5, 1.0) if len(tensors) <= 6 else (0.0, 1.0)
    rows = []
    for combo in itertools.product(choices, repeat=len(tensors)):
        s = np.zeros(len(projections))
        s[tensors] = combo
        for u in indices:
            covered = sum(s[k] for k in tensors if u in projections[k].indices)
            s[own[u]] = max(0.0, 1.0 - covered)
        rows.append(s)
    return np.array(rows) if rows else np.zeros((1, len(projections)))


def _sliced(accesses: list[TensorAccess], extent: dict[str, int], slice_windows: bool
            ) -> tuple[list[TensorAccess], set[str]]:
    """The accesses kept and the indices sliced: every window (`p + r`) keeps its index of largest extent
    and slices the others (in each slice the window is a coordinate), or with `slice_windows` False the
    windowed accesses are left out."""
    sliced: set[str] = set()
    kept = []
    for a in accesses:
        windows = [w for w in a.dims if len(w.terms) > 1]
        if windows and not slice_windows:
            continue
        for w in windows:
            major = [u for u, _ in w.terms if u not in sliced]
            if len(major) > 1:
                top = max(major, key=lambda u: extent[u])
                sliced |= {u for u in major if u != top}
        kept.append(a)
    return kept, sliced


def _minors(a: TensorAccess, extent: dict[str, int]) -> set[str]:
    """The indices of the access's windows (`p + r`) that, with the access's element, determine the rest of
    its indices: each window keeps one index of nonzero coefficient not yet named (its largest), and names
    the others. A window whose other indices are known takes one value of its kept one per value of itself."""
    minors: set[str] = set()
    for w in a.dims:
        if len(w.terms) > 1:
            major = [u for u, c in w.terms if u not in minors and c > 0]
            if major:
                top = max(major, key=lambda u: extent[u])
                minors |= {u for u, _ in w.terms if u != top}
    return minors


def _windows_joined(accesses: list[TensorAccess], problem: TilingProblem) -> list[_Projection]:
    """Every access as a coordinate projection onto all of its indices (Demmel and Dinh's reuse of a
    window): the points a set E projects to on a windowed access's indices inject into (its elements
    touched) × (the values of its minor indices, `_minors`), since the element and the minors give the
    major index. So x elements of X stand for at most x · M projected points (M: the minors' extents),
    each costing b / M bytes of the budget; a bare access is its own projection."""
    extent = problem.extent
    out = []
    for a in accesses:
        minors = _minors(a, extent)
        many = float(math.prod(extent[u] for u in minors))
        whole = float(math.prod(extent[u] for u in a.indices))
        out.append(_Projection(a.indices, min(float(a.exact) * many, whole),
                               problem.tensor(a.tensor).itemsize / many))
    return out


def _relaxation(points: int, factor: float, projections: list[_Projection], indices: frozenset[str],
                extent: dict[str, int]) -> _Relaxation:
    ps = [p for p in projections if p.indices] + [_Projection(frozenset({u}), float(extent[u]), 0)
                                                  for u in sorted(indices)]
    return _Relaxation(points, factor, tuple(ps), _weights(tuple(ps), indices))


def _relaxations(step: Step, problem: TilingProblem, made: frozenset[str],
                 counted: frozenset[str]) -> tuple[bool, list[tuple[_Relaxation, ...]]]:
    """Upper bounds on the points of the step that a set touching some bytes of the tensors in DRAM can
    hold, each a sum of parts (`_Relaxation`); the least of them counts. Three ways where it has windows:
    sliced by their minor indices, with the windowed tensors left out, or joined to their minor indices
    (`_windows_joined`). Where the step writes an intermediate,
    its points split in two: those whose result element lives and dies inside the set (all its reduction
    points are in the set: full fibres of the reduced indices), and the others (their result elements are
    in the buffer at the segment's start or end, or moved, so they count against the budget). The flag: the
    step writes a result of the chain or an intermediate that counts like one (`_counted`), so its segments
    may be cut by loads and births (`io_bound`)."""
    extent = problem.extent
    inputs = [a for a in step.reads if a.tensor not in made]
    inner = not problem.tensor(step.write.tensor).external and step.write.tensor not in counted
    seen: set[str] = set()
    inputs = [a for a in inputs if not (a.tensor in seen or seen.add(a.tensor))]  # one access per tensor
    out = []
    for slice_windows in (True, False):
        kept, sliced = _sliced([*inputs, step.write], extent, slice_windows)
        indices = frozenset(u for u in step.indices if u not in sliced)
        factor = float(math.prod(extent[u] for u in sliced))
        projections = [_Projection(frozenset(u for w in a.dims for u, _ in w.terms) - sliced, float(a.exact),
                                   problem.tensor(a.tensor).itemsize) for a in kept]
        parts = [_relaxation(step.points, factor, projections, indices, extent)]
        if inner:
            reads = [a for a in kept if a is not step.write]
            parts.append(_fibres(step, problem, reads, sliced))
            alone = [p for a, p in zip(kept, projections, strict=True) if a is not step.write]
            out.append((_relaxation(step.points, factor, alone, indices, extent),))
        out.append(tuple(parts))
    if any(len(w.terms) > 1 for a in (*inputs, step.write) for w in a.dims):
        # Windows joined to their minor indices (`_windows_joined`): no slicing, every tensor kept (an
        # intermediate written is left out: its points are not split here).
        joined = _windows_joined([*inputs] if inner else [*inputs, step.write], problem)
        out.append((_relaxation(step.points, 1.0, joined, frozenset(step.indices), extent),))
    return not inner, out


def _counted(problem: TilingProblem) -> frozenset[str]:
    """Intermediates whose every element, once used up, has made an element of a tensor that counts against
    a segment's budget: read whole by an einsum that reduces nothing and writes one element per point to a
    result of the chain (or to another such intermediate). An element of one made and used up inside a
    segment leaves its image there, so it counts against the budget as a result element would."""
    writer = {s.write.tensor: s for s in problem.steps}
    counted: set[str] = set()
    changed = True
    while changed:
        changed = False
        for t, producer in writer.items():
            if t in counted or problem.tensor(t).external:
                continue
            for s in problem.steps:
                injective = (all(len(w.terms) == 1 for w in s.write.dims)
                             and set(s.indices) <= s.write.indices and len(s.write.dims) == len(s.write.indices))
                target = s.write.tensor
                if s is producer or not injective or not (problem.tensor(target).external or target in counted):
                    continue
                if any(a.tensor == t and a.exact >= producer.write.exact for a in s.reads):
                    counted.add(t)
                    changed = True
                    break
    return frozenset(counted)


def _fibres(step: Step, problem: TilingProblem, inputs: list[TensorAccess], sliced: set[str]) -> _Relaxation:
    """Points whose intermediate result element is made and used up inside the set: the set is P × (the
    reduced indices whole) for a set P of result positions, so an input depending on reduced indices only
    through its own dimensions touches |its projection of P| × (those dimensions' values) elements (counted
    as 1 where a where-clause on a reduced index leaves the fibres uneven)."""
    extent = problem.extent
    written = step.write.indices
    reduced = [u for u in step.indices if u not in written]
    even = step.fibres
    projections = []
    for a in inputs:
        own = [w for w in a.dims if w.terms and all(u in reduced for u, _ in w.terms)]
        lone = [w.terms[0][0] for w in own if len(w.terms) == 1]
        times = 1.0
        if even and own:
            times = float(math.prod(w.full for w in own)) if len(set(lone)) == len(own) else float(
                max(w.full for w in own))
        indices = frozenset(u for w in a.dims for u, _ in w.terms if u not in reduced) - sliced
        projections.append(_Projection(indices, float(a.exact) / times, round(problem.tensor(a.tensor).itemsize
                                                                               * times)))
    factor = float(math.prod(extent[u] for u in sliced if u not in reduced) * math.prod(extent[u] for u in reduced))
    indices = frozenset(u for u in step.indices if u not in sliced and u not in reduced)
    return _relaxation(step.points, factor, projections, indices, extent)


@lru_cache(maxsize=256)
def _relaxations_of(problem: TilingProblem) -> tuple[tuple[int, bool, tuple[tuple[_Relaxation, ...], ...]], ...]:
    made, counted = frozenset(s.write.tensor for s in problem.steps), _counted(problem)
    out = []
    for s in problem.steps:
        if s.points > 0:
            tight, ways = _relaxations(s, problem, made, counted)
            out.append((s.points, tight, tuple(ways)))
    return tuple(out)


def _step_segments(points: int, ways: tuple[tuple[_Relaxation, ...], ...], budget: np.ndarray) -> np.ndarray:
    most = np.minimum.reduce([sum((r.most_points(budget) for r in parts), np.zeros(budget.shape)) for parts in ways])
    return np.ceil(points / np.minimum(most, points) - 1e-9)


def segments(problem: TilingProblem, budget: np.ndarray, tight: bool | None = None) -> np.ndarray:
    """The least number of pieces a run of the problem falls into when no piece touches more than `budget`
    bytes of the tensors that live in DRAM (each budget of the array); with `tight` True (False), only the
    steps that write a result (that do not), None all of them."""
    k = np.ones(budget.shape)
    for points, is_tight, ways in _relaxations_of(problem):
        if tight is None or is_tight == tight:
            k = np.maximum(k, _step_segments(points, ways, budget))
    return k


@lru_cache(maxsize=256)
def _pieces(problem: TilingProblem) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """`segments` on a geometric grid of budgets, from one element to beyond every tensor's size, for the
    steps that write results and for the others; the largest element."""
    itemsize = max(t.itemsize for t in problem.tensors)
    total = sum(problem.tensor(a.tensor).itemsize * math.prod(w.size for w in a.dims)
                for s in problem.steps for a in (*s.reads, s.write))
    grid = itemsize * GRID ** np.arange(int(math.log(4.0 * max(total, 1) / itemsize) / math.log(GRID)) + 2)
    return grid, segments(problem, grid, True), segments(problem, grid, False), itemsize


def _most(grid: np.ndarray, k: np.ndarray, moved: np.ndarray) -> float:
    useful = moved > 0
    return float(np.max(moved[useful] * (k[useful] - 1))) if useful.any() else 0.0


@lru_cache(maxsize=4096)
def io_bound(problem: TilingProblem, capacity: float, tight: bool = True) -> float:
    """Bytes every schedule of the problem moves between DRAM and a buffer of `capacity` bytes (the module's
    docstring). A step that writes a result (or an intermediate that counts like one): segments of R bytes
    of loads and births of its result elements each touch at most X = C + R + b bytes, and the births are
    at most the result's stores, so the traffic is at least R·(K(X) − 1) (for a matmul the tight
    2·MNK/√S − 2S of Smith et al.). Any other step: segments of R bytes of loads and stores, X = 2C + R + b.
    The most over the budgets X of the grid and over the steps; non-increasing in the buffer size. `tight`
    False: every step the second way (the bound before the first, kept for benchmarks/tiling.py)."""
    if not math.isfinite(capacity) or capacity <= 0:
        return 0.0
    grid, k_tight, k_loose, itemsize = _pieces(problem)
    if not tight:
        return _most(grid, np.maximum(k_tight, k_loose), grid - 2.0 * capacity - itemsize)
    return max(_most(grid, k_tight, grid - capacity - itemsize), _most(grid, k_loose, grid - 2.0 * capacity - itemsize))
