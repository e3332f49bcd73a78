"""Tiling problems solved once per shape: a network repeats the same einsum (the same spec, shapes, element
sizes, bindings and where-clause) in every block, and its least-traffic tiling is the same each time.

`CachedChains` is `IRChains` whose spaces and solutions are kept under a canonical key: the chain's
einsum descriptions with tensors renamed in order of first use and einsum names dropped (so `@fc_3` of
block 3 and `@fc_7` of block 7 share one entry), plus which produced tensors are read after the chain.
A solution is kept per (key, buffer size). The mapping reused for a second einsum is the first one's; it
names indices (the spec's letters) and binding labels, which the key includes, so its attributes are the
same as a fresh solve's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from solar.ir.ops import EinsumOp, FuncOp

from .tiling import Space
from .tiling_ir import DEFAULT_BUDGET, IRChains, problem_of, space_of
from .tiling_problem import Budget, EinsumDesc, Mapping, SearchStopped, Unfusable

Key = tuple[Any, ...]


def canonical(descs: Sequence[EinsumDesc], needed: frozenset[str]) -> Key:
    """The chain's shape, independent of tensor and einsum names."""
    ids: dict[str, str] = {}

    def tensor(name: str) -> str:
        return ids.setdefault(name, f"t{len(ids)}")

    body = tuple((d.spec, tuple((tensor(n), label, shape, size) for n, label, shape, size in d.inputs),
                  (tensor(d.output[0]), *d.output[1:]), d.where) for d in descs)
    return body, frozenset(tensor(t) for t in needed)


@dataclass
class SolveCache:
    """Spaces and solutions by canonical key, for one pass run (or longer: they depend on shapes only)."""

    spaces: dict[Key, Space] = field(default_factory=dict)
    unfusable: dict[Key, str] = field(default_factory=dict)
    solved: dict[tuple[Key, float], Mapping | None] = field(default_factory=dict)
    stopped: dict[tuple[Key, float], str] = field(default_factory=dict)  # searches that ran out of budget
    solves: int = 0  # MILP solves run
    hits: int = 0  # solves answered from the cache


class CachedChains(IRChains):
    def __init__(self, func: FuncOp, values: dict[str, int], cache: SolveCache | None = None,
                 budget: float | None = DEFAULT_BUDGET) -> None:
        super().__init__(func, values, budget)
        self.cache = cache if cache is not None else SolveCache()

    def _space(self, name: str, ops: Sequence[EinsumOp]) -> tuple[Key, Space]:
        descs, needed = self.piece(ops)
        key = canonical(descs, needed)
        if key in self.cache.unfusable:
            raise Unfusable(self.cache.unfusable[key])
        space = self.cache.spaces.get(key)
        if space is None:
            try:
                space = space_of(problem_of(name, descs, needed))
            except Unfusable as err:
                self.cache.unfusable[key] = str(err)
                raise
            self.cache.spaces[key] = space
        return key, space

    def space(self, name: str, ops: Sequence[EinsumOp]) -> Space:
        return self._space(name, ops)[1]

    def solve(self, name: str, ops: Sequence[EinsumOp], capacity: float,
              lower: bool = False) -> tuple[Mapping | None, str]:
        """`IRChains.solve`, with spaces and solutions shared by shape (`lower`: see there); a search that
        stopped early stops every later one of the same shape at once (SearchStopped)."""
        try:
            key, space = self._space(name, ops)
        except Unfusable as err:
            return None, str(err)
        if (key, capacity) in self.cache.stopped:
            self.cache.hits += 1
            raise SearchStopped(self.cache.stopped[(key, capacity)])
        if (key, capacity) in self.cache.solved:
            self.cache.hits += 1
            m = self.cache.solved[(key, capacity)]
        else:
            self.cache.solves += 1
            try:
                m = self.cache.solved[(key, capacity)] = space.solve(capacity, budget=Budget(self.budget))
            except SearchStopped as err:
                self.cache.stopped[(key, capacity)] = str(err)
                raise
        if m is None and lower:  # no mapping fits: the least at the smallest buffer one runs in
            m = space.solve_lower(capacity, Budget(self.budget))
        return m, "" if m is not None else "no tiling fits the buffer"

    def solve_space(self, name: str, ops: Sequence[EinsumOp], capacity: float) -> tuple[Space, Mapping | None]:
        """The space and its solution at `capacity` (what the pass annotates a single einsum with)."""
        space = self.space(name, ops)
        m, _ = self.solve(name, ops, capacity)
        return space, m
