"""The formulations a tiling space is solved as (docs/design/tiling.md, "What is enumerated"): acyclic orientations
of the graph of conflicting uses, or orders of the shared loops with orientations of the uses conflicting on
private loops; one per class of formulations a symmetry of the space relates.

Orientations are enumerated directly, edge by edge with a cycle check, not through the permutations of
the uses that induce them: those number n! (362,880 for the nine uses of a GEMM + scale + batch norm),
while the distinct orientations are often a handful. The enumeration is bounded: a space that needs more
than `FORMULATION_LIMIT` formulations (a long chain whose steps each bring their own conflicts multiplies
their counts) raises SearchStopped, as does a budget that runs out, and the caller cuts the chain or falls
back to a bound (docs/tiling.md, "The search budget").
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Any

from solar.backends.tiling_milp import Space  # the protocol of what a space offers (no import of tiling)
from solar.backends.tiling_problem import AccessDim, Budget, Slab, SpaceTooLarge, Use

Form = tuple[tuple[int, ...], tuple[str, ...] | None]  # (an order of the uses, an order of the shared loops)

FORMULATION_LIMIT = 1000  # more formulations than a search could solve within any budget worth waiting for
SUBSET_USES = 6  # shared-loop-order formulations enumerate subsets of the uses per shared index
SYMMETRY_LIMIT = 720  # renamings of the indices tried (products of permutations of like indices)


def conflict_pairs(space: Space, by_loops: bool) -> list[tuple[int, int]]:
    n = len(space.uses)
    return [(a, b) for a in range(n) for b in range(a + 1, n) if space.conflict(a, b, by_loops)]


# Longer than most: the forest bound, the reachability test and the least order are closures over one graph (its union-
# find and successor sets).
def orientations(n: int, pairs: list[tuple[int, int]], limit: int,
                 budget: Budget | None = None) -> list[tuple[int, ...]]:
    """One order of the n uses per acyclic orientation of the conflict `pairs`: the least permutation (in
    lexicographic order) that induces it, sorted, as enumerating every permutation and keeping the first of
    each orientation would give. Raises SearchStopped past `limit` orientations or the budget."""
    # Deleting an edge never adds acyclic orientations, so a graph has at least the 2^m of a spanning forest
    # of m edges: past the limit, say so before enumerating anything.
    root = list(range(n))

    def find(v: int) -> int:
        while root[v] != v:
            root[v] = root[root[v]]
            v = root[v]
        return v

    forest = 0
    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            root[ra] = rb
            forest += 1
    if 2 ** forest > limit:
        raise SpaceTooLarge(f"the tiling search gave up: its space needs more than {limit} formulations "
                            f"(at least 2^{forest})")
    succ: list[set[int]] = [set() for _ in range(n)]
    found: list[tuple[int, ...]] = []

    def reaches(a: int, b: int) -> bool:
        stack, seen = [a], {a}
        while stack:
            v = stack.pop()
            if v == b:
                return True
            for w in succ[v] - seen:
                seen.add(w)
                stack.append(w)
        return False

    def least_order() -> tuple[int, ...]:
        indegree = [0] * n
        for v in range(n):
            for w in succ[v]:
                indegree[w] += 1
        ready = [v for v in range(n) if not indegree[v]]
        heapq.heapify(ready)
        out = []
        while ready:
            v = heapq.heappop(ready)
            out.append(v)
            for w in succ[v]:
                indegree[w] -= 1
                if not indegree[w]:
                    heapq.heappush(ready, w)
        return tuple(out)

    def extend(k: int) -> None:
        if k == len(pairs):
            found.append(least_order())
            if len(found) > limit:
                raise SpaceTooLarge(f"the tiling search gave up: its space needs more than {limit} formulations")
            if budget is not None and len(found) % 64 == 0:
                budget.check("enumerating formulations")
            return
        a, b = pairs[k]
        for x, y in ((a, b), (b, a)):
            if not reaches(y, x):  # x before y closes no cycle
                succ[x].add(y)
                extend(k + 1)
                succ[x].discard(y)

    extend(0)
    return sorted(found)


def formulations(space: Space, budget: Budget | None = None, limit: int = FORMULATION_LIMIT) -> list[Form]:
    """The formulations to solve, each a small discrete choice fixed: either one orientation of the
    conflicting pairs of uses, or — where that needs fewer — an order of the shared loops together with
    one orientation of the pairs conflicting on private loops. Either family covers the whole space."""
    n = len(space.uses)
    by_uses: list[Form] = [(o, None) for o in orientations(n, conflict_pairs(space, False), limit, budget)]
    if n > SUBSET_USES or math.factorial(len(space.hstar)) >= len(by_uses):
        return distinct(space, by_uses)
    private = orientations(n, conflict_pairs(space, True), limit, budget)
    if math.factorial(len(space.hstar)) * len(private) >= len(by_uses):
        return distinct(space, by_uses)
    by_loops: list[Form] = [(o, loops) for loops in itertools.permutations(space.hstar) for o in private]
    return distinct(space, by_loops)


def distinct(space: Space, forms: list[Form]) -> list[Form]:
    """The formulations up to the symmetries of the space: one that a symmetry maps onto an earlier one
    covers the image of its part of the space, where every mapping has the same traffic and peak, so
    its optimum is the earlier one's and it is left out (the earliest of each class is kept)."""
    found = symmetries(space)
    if not found or len(forms) < 2:
        return forms
    pairs = {by_loops: conflict_pairs(space, by_loops) for by_loops in (False, True)}

    def key(order: tuple[int, ...], loops: tuple[str, ...] | None) -> tuple[Any, ...]:
        pos = {i: k for k, i in enumerate(order)}
        return loops, frozenset((a, b) if pos[a] < pos[b] else (b, a) for a, b in pairs[loops is not None])

    seen: set[tuple[Any, ...]] = set()
    out = []
    for order, loops in forms:
        k = key(order, loops)
        if k in seen:
            continue
        out.append((order, loops))
        seen.add(k)
        for pi, sigma in found:
            seen.add((None if loops is None else tuple(pi[u] for u in loops),
                      frozenset((sigma[a], sigma[b]) for a, b in k[1])))
    return out


def symmetries(space: Space) -> list[tuple[dict[str, str], tuple[int, ...]]]:
    """Symmetries of the space other than the identity: a renaming π of the indices (like extents and
    roles) with a permutation σ of the uses (use a becomes use σ[a]) such that each use renamed by π
    is use σ[a] (the same windows up to the order of its dimensions, element size, footprint, density,
    phases, loops and reductions) and the slabs renamed by π are the slabs. A mapping renamed so
    (tiles[π u] = tiles[u], S[σ a] = π(S[a])) has the same traffic and peak."""
    steps = space.problem.steps
    if space.merged:  # uses that share one read: a renaming would have to keep that pairing (not tried)
        return []

    def role(u: str) -> tuple[Any, ...]:
        return (space.extent[u], u in space.forced, u in space.batch, tuple(u in s.indices for s in steps))

    classes: dict[tuple[Any, ...], list[str]] = {}
    for u in space.indices:
        classes.setdefault(role(u), []).append(u)
    if math.prod(math.factorial(len(c)) for c in classes.values()) > SYMMETRY_LIMIT:
        return []

    def dims(ds: tuple[AccessDim, ...], pi: dict[str, str]) -> tuple[Any, ...]:
        return tuple(sorted((tuple(sorted((pi[u], c) for u, c in w.terms)), w.size, w.full) for w in ds))

    def use_sig(use: Use, pi: dict[str, str]) -> tuple[Any, ...]:
        return (use.step, use.write, use.itemsize, use.exact, use.density, use.live, dims(use.dims, pi),
                frozenset(pi[u] for u in use.free), frozenset(pi[u] for u in use.reduced))

    def slab_sig(slab: Slab, pi: dict[str, str]) -> tuple[Any, ...]:
        return (dims(slab.dims, pi), slab.itemsize, slab.exact, slab.written, slab.density, slab.live)

    ident = {u: u for u in space.indices}
    targets: dict[tuple[Any, ...], list[int]] = {}
    for b, use in enumerate(space.uses):
        targets.setdefault(use_sig(use, ident), []).append(b)
    slabs = sorted(slab_sig(sl, ident) for sl in space.slabs)
    out: list[tuple[dict[str, str], tuple[int, ...]]] = []
    groups = list(classes.values())
    for perms in itertools.product(*(itertools.permutations(g) for g in groups)):
        pi = {u: v for g, p in zip(groups, perms, strict=True) for u, v in zip(g, p, strict=True)}
        if sorted(slab_sig(sl, pi) for sl in space.slabs) != slabs:
            continue
        sources: dict[tuple[Any, ...], list[int]] = {}
        for a, use in enumerate(space.uses):
            sources.setdefault(use_sig(use, pi), []).append(a)
        if any(len(targets.get(k, [])) != len(v) for k, v in sources.items()):
            continue
        # Uses alike under π may map onto each other in any order: every matching is a symmetry.
        parts = list(sources.items())
        if math.prod(math.factorial(len(targets[k])) for k, _ in parts) > SYMMETRY_LIMIT:
            continue  # too many matchings to try: leaving symmetries out is only slower
        for choice in itertools.product(*(itertools.permutations(targets[k]) for k, _ in parts)):
            sigma = [0] * len(space.uses)
            for (_, src), dst in zip(parts, choice, strict=True):
                for a, b in zip(src, dst, strict=True):
                    sigma[a] = b
            if pi != ident or sigma != list(range(len(space.uses))):
                out.append((pi, tuple(sigma)))
    return out
