"""The MILP of a tiling space (docs/design/tiling.md, "The MILP"): one formulation per nesting order of the uses,
solved with `scipy.optimize.milp` by outer approximation (tangent cuts of exp). `Space.solve` drives it."""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from scipy.sparse import csr_array

from solar.backends.tiling_problem import AccessDim, Mapping, Slab, SpaceTooLarge, TilingProblem, Use


class Space(Protocol):
    """What a formulation reads of the mapping space it formulates (`solar.backends.tiling.Space`, which
    drives its formulations, is the one): its uses, slabs and loops, the traffic model, and the caches that
    formulations of one space share. Declared here so that the MILP need not import the space."""

    problem: TilingProblem
    extent: dict[str, int]
    multi: bool
    indices: tuple[str, ...]
    shared: tuple[str, ...]
    private: list[tuple[str, ...]]
    hstar: tuple[str, ...]
    batch: frozenset[str]
    forced: frozenset[str]
    cands: dict[str, tuple[int, ...]]
    uses: list[Use]
    slabs: list[Slab]
    merged: dict[str, tuple[int, ...]]
    merged_of: dict[int, str]
    merged_floor: dict[str, float]
    compulsory: float
    factor_cache: dict[tuple[Any, ...], tuple[list[float], list[float]]]
    point_cache: dict[tuple[Any, ...], list[float]]

    def footprint(self, dims: tuple[AccessDim, ...], span: dict[str, int]) -> int: ...

    def components(self, dims: tuple[AccessDim, ...],
                   loops: Iterable[str]) -> list[tuple[tuple[str, ...], tuple[AccessDim, ...]]]: ...

    def group_traffic(self, idx: tuple[str, ...], windows: tuple[AccessDim, ...], tiles: dict[str, int | None],
                      reload_of: Callable[[str], bool] = ...) -> int: ...

    def common(self, a: int, b: int, by_loops: bool = False) -> set[str]: ...

    def conflict(self, a: int, b: int, by_loops: bool = False) -> bool: ...

    def evaluate(self, tiles: dict[str, int], tiled: dict[str, frozenset[str]], capacity: float = ...,
                 solver: str = "milp") -> Mapping | None: ...

# ---- the MILP ---------------------------------------------------------------------------------------

Lin = tuple[dict[int, float], float]  # Σ coefficient·variable + constant

# HiGHS options that scipy.optimize.milp passes through verbatim. The formulation is solved at the root
# almost always (see Formulation), so HiGHS's primal heuristics (sub-MIPs at the root) only cost time.
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


class Formulation:
    """The MILP of one space for one nesting order of its uses (docs/design/tiling.md, "The MILP"). Built once;
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
    SET_LIMIT = 4096  # sets of uses tiling one index: past it the formulation is too large to be worth building

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
        sets = closed_sets(ranked, above, self.SET_LIMIT)
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

    def groups(self, label: str, dims: tuple[AccessDim, ...], free: Sequence[str], fixed: bool,
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
        # scipy is imported where a MILP is built, not at the top: --sol without --tile-search never needs it.
        from scipy.sparse import csr_array

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
        from scipy.optimize import Bounds, LinearConstraint, milp  # lazy, as in _matrix

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


def closed_sets(ranked: list[int], above: dict[int, set[int]], limit: int) -> list[frozenset[int]]:
    """The subsets t of `ranked` closed upward (i in t ⇒ above[i] ⊆ t), in the order of
    itertools.combinations by size; built by deciding each use after everything above it, so only closed
    sets are ever formed. Raises SpaceTooLarge past `limit` of them (independent uses give 2^n)."""
    where = {i: k for k, i in enumerate(ranked)}
    found: list[tuple[int, ...]] = []
    # Everything above a use comes later in `ranked`: decided first, walking it backwards.
    walk = sorted(ranked, key=lambda i: -where[i])

    def extend(k: int, chosen: set[int]) -> None:
        if k == len(walk):
            found.append(tuple(sorted(where[i] for i in chosen)))
            if len(found) > limit:
                raise SpaceTooLarge(f"the tiling search gave up: its space holds more than {limit} sets of uses "
                                    "tiling one index")
            return
        i = walk[k]
        extend(k + 1, chosen)
        if above[i] <= chosen:
            chosen.add(i)
            extend(k + 1, chosen)
            chosen.discard(i)

    extend(0, set())
    found.sort(key=lambda t: (len(t), t))
    return [frozenset(ranked[k] for k in t) for t in found]


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


