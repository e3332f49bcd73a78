"""Tiling on the IR: the einsums of a function as tiling problems (`IRChains`), a group or kernel under one
buffer three ways (`group_result`), buffer sizes (`resolve_buffer`, `curve`), the chosen tiling as IR
attributes (`describe`) and the cache-aware SOL mode (`cache_aware`, `add_cache_aware`; docs/sol.md)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from solar.backends.cost import CostModel, Peaks, Work
from solar.backends.io_bound import io_bound
from solar.backends.io_bound_global import GlobalDependency, Recompute, global_dependency
from solar.backends.mode_results import mode_result
from solar.backends.report import CacheAware, TargetReport
from solar.backends.tiling import Space
from solar.backends.tiling_problem import (
    Budget,
    EinsumDesc,
    Mapping,
    SearchStopped,
    TilingProblem,
    Unfusable,
    build_problem,
    desc_of,
)
from solar.backends.tiling_views import through_views
from solar.ir.analysis.units import Uses, units_of
from solar.ir.einsum_spec import parse_spec
from solar.ir.ops import EinsumOp, FuncOp, GroupOp, ModuleOp, Op, Value, Word
from solar.targets.loader import Target, TargetError

# ---- the IR: einsums, units and groups as tiling problems -------------------------------------------


@lru_cache(maxsize=1024)
def space_of(problem: TilingProblem) -> Space:
    """One space per problem, kept: its formulations, cuts and earlier optima serve the next buffer size."""
    return Space(problem)


@lru_cache(maxsize=1024)
def problem_of(name: str, descs: tuple[EinsumDesc, ...], needed: frozenset[str]) -> TilingProblem:
    """`build_problem`, cached; `needed` names the produced tensors read after the chain."""
    return build_problem(name, descs, lambda t: t in needed)


DEFAULT_BUDGET = 2.0  # CPU seconds one tiling problem's search may take (docs/tiling.md, "The search budget")
LONG_CHAIN = 3  # a chain with more contractions than this is cut along its seams, not solved as one MILP


class IRChains:
    """Einsums of one function as tiling problems: tensors named by SSA value, and who reads what. Each
    problem's search gets `budget` seconds (None: no limit)."""

    def __init__(self, func: FuncOp, values: dict[str, int], budget: float | None = DEFAULT_BUDGET) -> None:

        self.values = values
        self.budget = budget
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
        outside it, or by nothing at all: a result nobody reads is still written). Reads of views,
        broadcasts and constants are reads of what they view (`tiling_views.through_views`); raises
        Unfusable where that is not affine."""
        inside = set(ops)
        descs = []
        for op in ops:
            d = desc_of(op, self.values)
            d = through_views(d, [b.value for b in op.inputs], self.name, self.values)
            descs.append(EinsumDesc(d.name, d.spec, d.inputs, (self.name(op.results[0]), *d.output[1:]), d.where))
        needed = frozenset(self.name(op.results[0]) for op in ops
                           if not self.uses.of_value(op.results[0])
                           or any(r not in inside for r in self.uses.of_value(op.results[0])))
        return tuple(descs), needed

    def problem(self, name: str, ops: Sequence[EinsumOp]) -> TilingProblem:
        """The chain's tiling problem; raises Unfusable where the space cannot express it."""
        descs, needed = self.piece(ops)
        return problem_of(name, descs, needed)

    def solve(self, name: str, ops: Sequence[EinsumOp], capacity: float,
              lower: bool = False) -> tuple[Mapping | None, str]:
        """The least-traffic fused mapping of a chain (one einsum: its own mapping), or None and why. With
        `lower`, a chain no mapping of which fits gets its least traffic at the smallest buffer it runs in
        (`Space.solve_lower`). Raises SearchStopped where the search ran out of its budget."""
        try:
            problem = self.problem(name, ops)
        except Unfusable as err:
            return None, str(err)
        space = space_of(problem)
        budget = Budget(self.budget)
        m = space.solve_lower(capacity, budget) if lower else space.solve(capacity, budget=budget)
        return m, "" if m is not None else "no tiling fits the buffer"

    def check_views(self, ops: Sequence[EinsumOp]) -> None:
        """Raises Unfusable where a read through views, broadcasts or constants is not affine in the tensor
        it views (a reshape that merges dimensions, a slice bound that is not a number)."""
        self.piece(ops)

    def floor(self, name: str, ops: Sequence[EinsumOp], capacity: float) -> float | None:
        """The traffic every schedule of the chain moves under the buffer (`io_bound`), or None where the
        chain is not a tiling problem."""
        try:
            problem = self.problem(name, ops)
        except Unfusable:
            return None
        return io_bound(problem, capacity)

    def forced(self, name: str, ops: Sequence[EinsumOp], capacity: float) -> GlobalDependency | None:
        """The traffic beyond the compulsory one that a global dependency of the chain forces on every
        schedule under the buffer (`global_dependency`), or None."""
        try:
            problem = self.problem(name, ops)
        except Unfusable:
            return None
        return global_dependency(problem, capacity)

    def space(self, name: str, ops: Sequence[EinsumOp]) -> Space:
        return space_of(self.problem(name, ops))


@dataclass
class GroupResult:
    """A chain (a solar.group, or the einsums of one kernel) under one buffer, three ways: fused as a
    whole (intermediates stay on chip when their tiles fit), each unit (kernel) fused on its own, and
    each einsum on its own (intermediates through DRAM). Its traffic is the least of them. `floor`: the
    traffic every schedule of the chain as a whole moves (`io_bound`; None where it is not a problem);
    `forced`: the traffic beyond the compulsory one a global dependency forces (`global_dependency`)."""

    name: str
    capacity: float
    fused: Mapping | None
    fused_why: str
    per_unit: float | None
    per_einsum: float | None
    floor: float | None = None
    forced: GlobalDependency | None = None
    cut: float | None = None  # the chain cut along its seams, each piece fused on its own
    stopped: str | None = None  # why the search of the chain as a whole stopped early, or None

    @property
    def options(self) -> dict[str, float]:
        out = {"fused": self.fused.traffic if self.fused is not None else None, "cut": self.cut,
               "per-unit": self.per_unit, "per-einsum": self.per_einsum}
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


def seams(einsums: Sequence[EinsumOp]) -> list[list[EinsumOp]]:
    """A chain cut before every contraction but the first: each piece one contraction with the einsums
    around it up to the next (its prologue and epilogue), whose tensors at the cuts go through DRAM."""
    pieces: list[list[EinsumOp]] = [[]]
    seen = False
    for op in einsums:
        contraction = len(op.inputs) > 1 and bool(parse_spec(op.spec).reduced)
        if contraction and seen:
            pieces.append([])
        seen |= contraction
        pieces[-1].append(op)
    return pieces


def group_result(chains: IRChains, name: str, units: Sequence[Sequence[EinsumOp]], capacity: float,
                 lower: bool = False) -> GroupResult:
    """`lower`: for a lower bound (the cache-aware SOL mode): see `IRChains.solve`. A chain whose search
    stops early (its budget, a space too large to search), or with more than LONG_CHAIN contractions, is
    also cut along its seams (`seams`), each piece fused on its own: `cut`, and `stopped` says why."""
    einsums = [op for u in units for op in u]
    pieces = seams(einsums)
    fused, why, stopped = None, "a single einsum", None
    if len(pieces) > LONG_CHAIN:
        why = stopped = f"a chain of {len(pieces)} contractions is cut along its seams, not solved as one MILP"
    elif len(einsums) > 1:
        try:
            fused, why = chains.solve(name, einsums, capacity, lower)
        except SearchStopped as err:
            why = stopped = str(err)

    def total(pieces: Sequence[Sequence[EinsumOp]]) -> float | None:
        out = 0.0
        for k, piece in enumerate(pieces):
            try:
                m, _ = chains.solve(f"{name}.{k}" if len(piece) > 1 else piece[0].symbol, piece, capacity)
            except SearchStopped:
                return None  # this way of running the chain has no figure
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
    cut = total(pieces) if stopped is not None and 1 < len(pieces) < len(einsums) else None
    if len(einsums) == 1:
        try:
            fused, _ = chains.solve(einsums[0].symbol, einsums, capacity, lower)
        except SearchStopped as err:
            stopped = str(err)
    whole = name if len(einsums) > 1 else einsums[0].symbol
    floor = chains.floor(whole, einsums, capacity) if lower else None
    forced = chains.forced(whole, einsums, capacity) if lower else None
    return GroupResult(name, capacity, fused, why, per_unit, per_einsum, floor, forced, cut, stopped)


def lower_bound(fused_bytes: float, floor: float | None, forced: float = 0.0) -> float:
    """The cache-aware bytes of a group (docs/sol.md, "Why these are lower bounds"): the traffic every
    schedule of the group moves under the buffer (`floor`, `io_bound`; None where the group is not a tiling
    problem), never below the fused bytes plus the traffic a global dependency forces beyond them
    (`forced`, `io_bound_global`). Neither the tiling space's least (an estimate a real schedule can
    beat: a buffer with room to spare keeps part of a slab across a reload) nor the unfused bytes (each
    kernel on an unbounded buffer of its own) caps it: neither is a schedule's traffic on this buffer."""
    return max(fused_bytes + forced, floor or 0.0)


class Tilings:
    """The analysis of a module's tilings (`ctx.analysis(Tilings, module)`): per function its einsums as
    tiling problems (`IRChains`), and every chain's `GroupResult` under a buffer, solved once. --tile-search
    fills it; --sol's cache-aware mode reads the same results for a target whose buffer is the same size."""

    def __init__(self, module: ModuleOp) -> None:
        self.values = module.param_values()
        self.budget: float | None = DEFAULT_BUDGET
        self._chains: dict[FuncOp, IRChains] = {}
        self._results: dict[tuple[FuncOp, str, float, bool, tuple[int, ...]], GroupResult] = {}
        self.solved = 0  # chains solved here (each later request for one is a cache hit)

    def chains(self, func: FuncOp) -> IRChains:
        if func not in self._chains:
            self._chains[func] = IRChains(func, self.values, self.budget)
        return self._chains[func]

    def set_budget(self, seconds: float | None) -> None:
        """The seconds each tiling problem's search may take from now on (None: no limit)."""
        self.budget = seconds
        for chains in self._chains.values():
            chains.budget = seconds

    def group(self, func: FuncOp, name: str, units: Sequence[Sequence[EinsumOp]], capacity: float,
              lower: bool = False) -> GroupResult:
        """`group_result` of a chain of `func`, kept by its name, its ops, the buffer size and `lower`."""
        ops = tuple(id(op) for u in units for op in u)
        key = (func, name, capacity, lower, ops)
        plain = self._results.get((func, name, capacity, False, ops))
        if key not in self._results and lower and plain is not None and plain.fused is not None:
            # A chain that fits the buffer: the lower-bound search (`lower`) finds the same mapping.
            einsums = [op for u in units for op in u]
            whole = name if len(einsums) > 1 else einsums[0].symbol
            chains = self.chains(func)
            self._results[key] = dataclasses.replace(plain, floor=chains.floor(whole, einsums, capacity),
                                                     forced=chains.forced(whole, einsums, capacity))
        if key not in self._results:
            self._results[key] = group_result(self.chains(func), name, units, capacity, lower)
            self.solved += 1
        return self._results[key]


def einsum_units(ops: Sequence[Op]) -> list[list[EinsumOp]] | None:
    """The units (kernels) of a group or unit as einsum lists; None when one of them is not einsums."""

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


def resolve_buffer(spec: str, target: Target) -> float:
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


def cache_aware(model: CostModel, capacity: float, label: str, tilings: Tilings | None = None,
                peaks: Peaks | None = None) -> CacheAware:
    """Cache-aware bytes of every group of a CostModel (docs/sol.md, "Cache-aware mode"); with `tilings`
    (the module's analysis), chains already solved under this buffer are not solved again.

    A group's bytes are a bound every schedule of it obeys under the buffer (`lower_bound`): the fused
    bytes, plus what a global dependency forces beyond them (`global_dependency`), or the segment bound
    (`io_bound`), whichever is more; a group the tiling model cannot express keeps its fused bytes, with the
    reason. Beside it, labelled as an estimate and never a bound, the least traffic of the tilings found
    (the whole group as one nest, its kernels one by one, its einsums one by one: schedules that run, whose
    model a real buffer can still beat) and the gap between the two. With `peaks`, a dependency whose
    elements may be round-tripped or recomputed is priced at its least-time split (`price_recompute`)."""
    tilings = tilings if tilings is not None else Tilings(model.module)
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
                res = tilings.group(model.func, w.name.lstrip("@"), units, capacity, lower=True)
                reason = None if res.fused is not None else f"no tiling of the group as a whole: {res.fused_why}"
            except Exception as err:  # a construct the tiling model does not cover keeps the fused bytes
                reason = f"not modelled: {err}"
        estimate = res.traffic if res is not None else None
        floor = res.floor if res is not None else None
        forced = res.forced if res is not None else None
        chosen = lower_bound(w.bytes, floor, forced.extra if forced is not None else 0.0)
        work = dataclasses.replace(w, bytes=chosen)
        argument = _argument(w.bytes, floor, forced)
        if peaks is not None and forced is not None and forced.recompute is not None:
            split = price_recompute(work, w.bytes, forced.recompute, model, peaks)
            if split is not None and peaks.time(split).seconds > peaks.time(work).seconds:
                work, chosen = split, float(split.bytes)
                argument = (f"global dependency (per fibre: round trips or recomputing @{forced.recompute.producer}, "
                            f"the least time; @{forced.reduction} over {', '.join(forced.fibre)})")
        if res is not None and res.stopped is not None:
            reason = f"{res.stopped} (only the estimate depends on the search, not this bound)"
        works.append(work)

        def scaled(x: float | None, trips: int = w.trips) -> int | None:
            return None if x is None else round(x * trips)

        rows.append({"name": w.name, "bytes": round(chosen * w.trips), "bound": argument,
                     "fused_bytes": round(w.bytes * w.trips), "unfused_bytes": round(unfused * w.trips),
                     "estimate_bytes": scaled(estimate),
                     "gap": None if estimate is None or chosen <= 0 else estimate / chosen,
                     "strategy": res.strategy if res is not None else "none",
                     "whole_group_bytes": scaled(res.fused.traffic if res is not None and res.fused else None),
                     "segment_bound_bytes": scaled(floor),
                     "forced_bytes": scaled(forced.extra if forced is not None else None),
                     "reason": reason,
                     "schedules": {"per_unit_bytes": scaled(res.per_unit if res else None),
                                   "per_einsum_bytes": scaled(res.per_einsum if res else None)}})
    return CacheAware(capacity, label, works, list(model.groups), rows)


def price_recompute(work: Work, fused_bytes: float, rec: Recompute, model: CostModel, peaks: Peaks) -> Work | None:
    """The group's work where `rec.elements` elements of a contraction's result are each round-tripped
    (`rec.round_trip` bytes beyond the fused ones) or recomputed (`rec.points` points again, one FLOP each,
    on the fastest unit and precision the contraction's kernel runs on: both lower than the truth), at the
    split with the least roofline time: a time every schedule needs. Its bytes are the split's, at least the
    group's bound. None where the contraction's kernel is not found."""
    unit = next((u for u in model.units if any(isinstance(o, EinsumOp) and o.symbol == rec.producer
                                              for o in u.ops)), None)
    keys = [(d, True) for d in unit.flops_tensor] + [(d, False) for d in unit.flops_vector] if unit else []
    if not keys:
        return None
    dtype, contraction = max(keys, key=lambda k: peaks.compute(*k))

    def split(kept: float) -> Work:
        """`kept` elements round-tripped, the others recomputed."""
        flops = (work.flops_tensor if contraction else work.flops_vector).copy()
        flops[dtype] += rec.points * (rec.elements - kept)
        field = "flops_tensor" if contraction else "flops_vector"
        return dataclasses.replace(work, bytes=max(work.bytes, fused_bytes + rec.round_trip * kept), **{field: flops})

    low, high = 0.0, rec.elements  # the time is convex in the split (the max of monotone linear terms)
    for _ in range(100):
        a, b = low + (high - low) / 3, high - (high - low) / 3
        if peaks.time(split(a)).seconds <= peaks.time(split(b)).seconds:
            high = b
        else:
            low = a
    return min((split(x) for x in (0.0, low, rec.elements)), key=lambda w: peaks.time(w).seconds)


def _argument(fused_bytes: float, floor: float | None, forced: GlobalDependency | None) -> str:
    """Which argument gives a group's cache-aware bytes (`lower_bound`)."""
    with_forced = fused_bytes + (forced.extra if forced is not None else 0.0)
    if floor is not None and floor > with_forced:
        return "segment bound"
    if forced is not None and forced.extra > 0:
        return f"global dependency ({forced.argument}: @{forced.reduction} over {', '.join(forced.fibre)})"
    return "fused bytes"


def add_cache_aware(report: TargetReport, model: CostModel, buffer: str, tilings: Tilings | None = None) -> str | None:
    """Adds the cache-aware mode to a target's report: every group (a unit outside all groups is its own)
    with its least DRAM traffic under `buffer` (l2, smem or a size; docs/tiling.md), kept between its
    fused and unfused bytes. Returns why the mode is not available on this target, or None."""
    try:
        capacity = resolve_buffer(buffer, report.peaks.target)
    except (ValueError, TargetError) as err:
        return str(err)
    ca = cache_aware(model, capacity, buffer, tilings, report.peaks)
    ca.mode = mode_result("cache_aware", ca.works, report.peaks)
    report.cache_aware = ca
    return None
