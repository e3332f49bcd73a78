"""The speed of light as a function of the size parameters: evaluate every mode at points and grids.

One `CostSurface` prices a module (after the passes: lifted, fused) on a list of targets with symbolic sizes
once: the cost model runs with `formula.symbols`, so every unit's FLOPs and bytes are formulas (barvinok's
piecewise quasi-polynomials, with `min`/`max` where the model takes them). A point then costs an evaluation
of those formulas, and a grid of a thousand points one vectorised evaluation, instead of a run of the passes.

    surface = CostSurface(module, [load_target("h100"), load_target("b200")])  # buffer="l2": cache-aware too
    surface.params                                  # ("BATCH", "CTX"): every size parameter, in order
    surface.formulas("fused")                       # {"flops_tensor": Formula, "flops_vector": ..., "bytes": ...}
    surface.at({"BATCH": 8})                        # list[PointCost]: each target × mode (unset sizes: defaults)
    sweep = surface.grid({"BATCH": [1, 2, 4, 8], "CTX": [512, 1024]})
    sweep.records()                                 # one dict per point, target and mode (PointCost.as_record)
    sweep.arrays["h100-sxm"]["fused"].seconds       # NumPy arrays over the grid (ModeArrays)
    sweep.factors(2e-3)                             # the inverse roofline at every point, per target and mode
    crossover(surface, "BATCH", "h100-sxm", "fused", 1, 1024)  # [Crossover]: where the bound changes kind
    crossovers(sweep)                               # every change along every swept size of the grid

Every number is exact: counts are integers (Python integers on the grid too), times are the same roofline as
`--sol` (`t = max(F_tensor/Π, F_vector/Π, B/β)` per unit, Σ per mode). A point of a sweep equals
`--bind-params` at that point followed by `--sol` (tests/unit/test_sweep.py checks every mode).

Where the cost model must decide between sizes that only a point can (a data-dependent op's count, such as a
sort's ⌈log₂ n!⌉), the surface counts at each point instead (exact, slower) and says so in `per_point_reason`.
The cache-aware mode needs a tiling search at each point (`buffer=`): it is solved per point and cached by sizes.

Modes: `unfused`, `fused`, `whole_graph` and, with a buffer, `cache_aware` (docs/sol.md).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from solar.ir.analysis.formula import Formula, NotSymbolic, symbols
from solar.ir.analysis.isl_model import isl_name
from solar.ir.ops import ModuleOp
from solar.targets.loader import Target

from .cost import CostModel, Peaks, Work
from .mode_results import ModeResult
from .report import analyse
from .sweep_spec import SweepError, check_axes
from .tiling_ir import Tilings, add_cache_aware

MODES = ("unfused", "fused", "whole_graph")
CACHE_AWARE = "cache_aware"
@dataclass(frozen=True)
class PointCost(ModeResult):
    """One mode on one target at one point: the `--sol` figures of that mode (`ModeResult`: FLOPs, bytes,
    time and bound kind), and where they were evaluated."""

    point: dict[str, int] = dataclasses.field(default_factory=dict)
    target: str = ""

    def as_record(self) -> dict[str, Any]:
        return {"point": dict(self.point), "target": self.target, "mode": self.mode, "time_s": self.seconds,
                "bound": self.bound, "flops": self.flops, "bytes": self.bytes, "tensor_s": self.tensor_s,
                "vector_s": self.vector_s, "memory_s": self.memory_s}


@dataclass(frozen=True)
class _WorkFormulas:
    """One unit's or group's counts as formulas (one run of it multiplied by its trips)."""

    name: str
    tensor: dict[Any, Formula | int]  # DType -> FLOPs over all trips
    vector: dict[Any, Formula | int]
    bytes: Formula | int

    @staticmethod
    def of(w: Work) -> _WorkFormulas:
        return _WorkFormulas(w.name, {d: n * w.trips for d, n in w.flops_tensor.items() if n},
                             {d: n * w.trips for d, n in w.flops_vector.items() if n}, w.bytes * w.trips)


@dataclass
class ModeArrays:
    """A mode on a target over a grid: each field an array of the grid's shape, but `unit_compute` and
    `unit_memory`: each unit's compute and memory time at the grid's first point (the design space scales
    them). Per-unit arrays over the grid are summed as they come, never kept: a million points of a
    program of hundreds of units fit in memory."""

    seconds: np.ndarray
    tensor_s: np.ndarray
    vector_s: np.ndarray
    memory_s: np.ndarray
    flops: np.ndarray  # exact integers (object arrays)
    bytes: np.ndarray
    compute_s: np.ndarray  # Σ over units of max(tensor, vector): the inverse roofline's compute factor
    unit_compute: np.ndarray  # shape (units,)
    unit_memory: np.ndarray
    # Each unit's (tensor_s, vector_s, memory_s) over the whole grid, shape (units, 3, *grid), only where
    # `CostSurface.grid(per_unit=True)` asked for them (solar-llm's twins scale each unit on its own).
    unit_terms: np.ndarray | None = None

    def bounds(self) -> np.ndarray:
        kinds = np.array(["tensor", "vector", "memory"], dtype=object)
        stacked = np.stack([self.tensor_s, self.vector_s, self.memory_s])
        out = kinds[np.argmax(stacked, axis=0)]
        return np.where(self.seconds > 0, out, "none")


class CostSurface:
    """Every mode of `module` on every target, as a function of the size parameters (module docstring)."""

    def __init__(self, module: ModuleOp, targets: Sequence[Target], *, fp32_precision: str = "framework",
                 buffer: str | None = None, max_points: int | None = None, check_accesses: bool = True,
                 precision_floor: str | None = None) -> None:
        """`check_accesses=False` where the caller has refused wrong programs already (the --sol pass)."""
        self.module = module
        self.targets = list(targets)
        self.fp32_precision = fp32_precision
        self.precision_floor = precision_floor  # backends/precision_policy.py
        self.buffer = buffer  # l2, smem or a size: adds the cache-aware mode (a tiling search per point)
        # The most points of a grid (None: 10^6). The --sol pass asks for --max-points past 10^3 cache-aware
        # points before it builds a surface; Python callers (solar-llm's serving model) set their own.
        self.max_points = max_points
        self.params: tuple[str, ...] = tuple(p.name for p in module.params)
        self.defaults: dict[str, int | None] = {p.name: p.default for p in module.params}
        self.peaks = [Peaks(t, precision_floor) for t in self.targets]
        self.per_point_reason: str | None = None
        self._isl_names = {p: isl_name(p) for p in self.params}
        self._tiled: dict[tuple[int, ...], dict[str, list[tuple[float, float, float, int, int]]]] = {}
        try:
            model = CostModel(module, fp32_precision, values=symbols(self.params, isl_name),
                              check_accesses=check_accesses)
            self.units = [_WorkFormulas.of(w) for w in model.units]
            self.groups = [_WorkFormulas.of(w) for w in model.groups]
            self.whole = _WorkFormulas.of(model.whole_graph())
        except (NotSymbolic, TypeError) as err:
            # Only a point decides (a data-dependent op's count): count at each point instead, exactly.
            self.per_point_reason = str(err) or type(err).__name__
            self.units, self.groups, self.whole = [], [], _WorkFormulas("whole graph", {}, {}, 0)
            model = CostModel(module, fp32_precision, values=self.point({}), check_accesses=False) if all(
                v is not None for v in self.defaults.values()) else None
        # What each unit and group computes, for matching them across modules (bench/twins.py); None where
        # the per-point counts have no defaults to say it.
        self.unit_keys = [work_key(w) for w in model.units] if model is not None else None
        self.group_keys = [work_key(w) for w in model.groups] if model is not None else None

    @property
    def modes(self) -> tuple[str, ...]:
        return MODES + ((CACHE_AWARE,) if self.buffer is not None else ())

    @property
    def symbolic(self) -> bool:
        return self.per_point_reason is None

    def check_swept(self, names: Iterable[str]) -> None:
        """Every swept size must change some count: a declared size that no count uses is an error."""
        if not self.symbolic:
            return
        used = {n for mode in MODES for f in self.formulas(mode).values() if isinstance(f, Formula)
                for n in f.params}
        for name in names:
            self.point({name: 1})
            if self._isl_names[name] not in used:
                raise SweepError(f"size parameter {name} does not appear in any count: sweeping it changes "
                                 "nothing")

    def keys(self, mode: str) -> list[tuple[str, frozenset[str]]] | None:
        """`work_key` of each work of `mode`, in the order of its `ModeArrays.unit_*` rows (None: unknown)."""
        if mode == "whole_graph":
            return [("graph", frozenset())]
        return self.unit_keys if mode == "unfused" else self.group_keys  # cache-aware: a row per group

    def works(self, mode: str) -> list[_WorkFormulas]:
        return {"unfused": self.units, "fused": self.groups, "whole_graph": [self.whole]}[mode]

    def formulas(self, mode: str) -> dict[str, Formula | int]:
        """The mode's totals as formulas: FLOPs on tensor units, on vector units, and DRAM bytes."""
        works = self.works(mode)
        return {"flops_tensor": sum((n for w in works for n in w.tensor.values()), 0),
                "flops_vector": sum((n for w in works for n in w.vector.values()), 0),
                "bytes": sum((w.bytes for w in works), 0)}

    # -- points ---------------------------------------------------------------------------------------
    def point(self, values: Mapping[str, int]) -> dict[str, int]:
        """A full point: `values` for the sizes given, defaults for the rest (each must have one)."""
        for name, v in values.items():
            if name not in self.params:
                raise SweepError(f"no size parameter {name} (the module has {', '.join(self.params) or 'none'})")
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v <= 0:
                raise SweepError(f"{name} must be a positive integer, not {v!r}")
        out: dict[str, int] = {}
        for name in self.params:
            v = values.get(name, self.defaults[name])
            if v is None:
                raise SweepError(f"size parameter {name} has no default: give it a value or a range")
            out[name] = int(v)
        return out

    def at(self, values: Mapping[str, int]) -> list[PointCost]:
        """Every mode on every target at one point (target-major, then the modes in order)."""
        point = self.point(values)
        return self.grid({k: [v] for k, v in point.items()}).costs()

    def grid(self, axes: Mapping[str, Sequence[int]], per_unit: bool = False) -> Sweep:
        """Every mode on every target at every point of the product of `axes` (sizes not given: defaults);
        `per_unit` keeps each unit's roofline terms over the grid too (`ModeArrays.unit_terms`)."""
        check_axes(self.params, axes, max_points=self.max_points)
        for name, values in axes.items():
            for v in values:
                self.point({name: v})
        fixed = self.point({k: v[0] for k, v in axes.items()})
        names = [n for n in self.params if n in axes] + [n for n in self.params if n not in axes]
        shape = tuple(len(axes[n]) for n in names if n in axes)
        mesh = np.meshgrid(*[np.asarray(list(axes[n]), dtype=object) for n in names if n in axes], indexing="ij")
        env = {n: m for n, m in zip([n for n in names if n in axes], mesh, strict=True)}
        env.update({n: np.full(shape, fixed[n], dtype=object) for n in names if n not in axes})
        swept = tuple(n for n in names if n in axes)
        arrays = self._symbolic(env, per_unit) if self.symbolic else self._per_point(env, shape, per_unit)
        if self.buffer is not None:
            for t, per_target in arrays.items():
                per_target[CACHE_AWARE] = self._cache_aware(env, shape, t, per_unit)
        return Sweep(self, swept, {n: list(axes[n]) for n in swept}, env, arrays)

    # -- evaluation -----------------------------------------------------------------------------------
    def _symbolic(self, env: Mapping[str, np.ndarray], per_unit: bool) -> dict[str, dict[str, ModeArrays]]:
        isl_env = {self._isl_names[n]: v for n, v in env.items()}
        shape = next(iter(env.values())).shape if env else ()

        def value(f: Formula | int) -> np.ndarray:
            if isinstance(f, Formula):  # a memo of its own: a grid's values are not kept past their use
                return np.broadcast_to(np.asarray(f._eval(isl_env, shape, {}), dtype=object), shape)
            return np.full(shape, f, dtype=object)

        out: dict[str, dict[str, ModeArrays]] = {}
        for peaks in self.peaks:
            out[peaks.target.name] = {mode: _mode_arrays((self._work_arrays(w, peaks, value) for w in
                                                          self.works(mode)), shape, per_unit) for mode in MODES}
        return out

    @staticmethod
    def _work_arrays(w: _WorkFormulas, peaks: Peaks, value: Any) -> tuple[np.ndarray, ...]:
        on_unit: dict[str, Any] = {"tensor": 0.0, "vector": 0.0}
        flops: Any = 0
        for counts, contraction in ((w.tensor, True), (w.vector, False)):
            for d, n in counts.items():
                c = peaks.choice(d, contraction)
                exact = value(n)
                flops = flops + exact
                on_unit[c.unit] = on_unit[c.unit] + exact.astype(float) / c.flop_per_s
        nbytes = value(w.bytes)
        memory = nbytes.astype(float) / peaks.bandwidth
        return on_unit["tensor"], on_unit["vector"], memory, flops, nbytes

    def _per_point(self, env: Mapping[str, np.ndarray], shape: tuple[int, ...],
                   per_unit: bool) -> dict[str, dict[str, ModeArrays]]:
        """The cost model at each point (exact; for modules whose counts only a point decides)."""
        cells: dict[str, dict[str, list[tuple[np.ndarray, ...]]]] = {}
        flat = {n: v.reshape(-1) for n, v in env.items()}
        size = math.prod(shape)
        per: dict[str, dict[str, list[list[tuple[float, float, float, int, int]]]]] = {
            p.target.name: {m: [] for m in MODES} for p in self.peaks}
        for k in range(size):
            values = {n: int(v[k]) for n, v in flat.items()}
            model = CostModel(self.module, self.fp32_precision, values=values, check_accesses=False)
            works = {"unfused": model.units, "fused": model.groups, "whole_graph": [model.whole_graph()]}
            for peaks in self.peaks:
                for mode in MODES:
                    rows = []
                    for w in works[mode]:
                        t = peaks.time(w)
                        rows.append((t.tensor_s, t.vector_s, t.memory_s, w.flops, w.total_bytes))
                    per[peaks.target.name][mode].append(rows)
        for name, modes in per.items():
            cells[name] = {}
            for mode, points in modes.items():
                n_units = max((len(p) for p in points), default=0)
                cols = [tuple(np.array([p[u][j] for p in points], dtype=float if j < 3 else object).reshape(shape)
                              for j in range(5)) for u in range(n_units)]
                cells[name][mode] = cols  # type: ignore[assignment]
        return {name: {mode: _mode_arrays(cols, shape, per_unit) for mode, cols in modes.items()}  # type: ignore[arg-type]
                for name, modes in cells.items()}

    def _cache_aware(self, env: Mapping[str, np.ndarray], shape: tuple[int, ...], target: str,
                     per_unit: bool) -> ModeArrays:
        """The cache-aware mode at each point: a tiling search per point, cached by the point's sizes."""
        flat = {n: v.reshape(-1) for n, v in env.items()}
        points = []
        for k in range(math.prod(shape)):
            point = tuple(int(flat[n][k]) for n in self.params)
            if point not in self._tiled:
                self._tiled[point] = self._tile_point(dict(zip(self.params, point, strict=True)))
            points.append(self._tiled[point].get(target))
        if any(p is None for p in points):  # the target lacks the buffer's figure: no cache-aware mode
            nan = np.full(shape, math.nan)
            return _mode_arrays([(nan, nan, nan, np.zeros(shape, dtype=object), np.zeros(shape, dtype=object))],
                                shape, per_unit)
        groups = len(points[0])  # the same groups at every point
        cols = [tuple(np.array([p[g][j] for p in points], dtype=float if j < 3 else object).reshape(shape)
                      for j in range(5)) for g in range(groups)]
        return _mode_arrays(cols, shape, per_unit)

    def _tile_point(self, point: dict[str, int]) -> dict[str, list[tuple[float, float, float, int, int]]]:
        """Per target, each group's cache-aware (tensor_s, vector_s, memory_s, flops, bytes) at `point`."""
        bound = copy.deepcopy(self.module)
        bound.params = [dataclasses.replace(p, default=point[p.name]) for p in bound.params]
        model = CostModel(bound, self.fp32_precision, check_accesses=False)  # checked in __init__
        tilings = Tilings(bound)
        out: dict[str, list[tuple[float, float, float, int, int]]] = {}
        for peaks in self.peaks:
            report = analyse(model, peaks, None)
            assert self.buffer is not None
            if add_cache_aware(report, model, self.buffer, tilings) is None and report.cache_aware is not None:
                out[peaks.target.name] = [(t.tensor_s, t.vector_s, t.memory_s, w.flops, w.total_bytes)
                                          for w in report.cache_aware.works for t in [peaks.time(w)]]
        return out


def work_key(w: Work) -> tuple[str, frozenset[str]]:
    """What a unit or group computes, independent of where it sits: its kind and the set of its kernels' and
    einsums' symbols without their numbering (`@linear_7`, `@linear_9.0` -> `linear`). The same layer of two
    twins of a model has the same keys; a group spanning every layer has the same key in both."""
    names = {re.sub(r"(_\d+)?(\.\d+)*$", "", op.symbol) for top in w.ops for op in top.walk()
             if isinstance(getattr(op, "symbol", None), str) and op.opname in ("solar.kernel", "solar.einsum")}
    return w.kind, frozenset(names)


def _mode_arrays(works: Iterable[tuple[np.ndarray, ...]], shape: tuple[int, ...],
                 per_unit: bool = False) -> ModeArrays:
    """A mode's arrays from its units' (tensor_s, vector_s, memory_s, flops, bytes), summed one unit at a time
    (each unit's terms kept over the grid only when `per_unit`)."""
    tensor, vector, memory, compute, seconds = (np.zeros(shape) for _ in range(5))
    flops: Any = np.zeros(shape, dtype=object)
    nbytes: Any = np.zeros(shape, dtype=object)
    first_compute: list[float] = []
    first_memory: list[float] = []
    terms: list[np.ndarray] = []
    for w in works:
        t, v, m = (np.asarray(w[k], dtype=float) + np.zeros(shape) for k in range(3))
        c = np.maximum(t, v)
        tensor += t
        vector += v
        memory += m
        compute += c
        seconds += np.maximum(c, m)
        flops = flops + np.asarray(w[3], dtype=object)
        nbytes = nbytes + np.asarray(w[4], dtype=object)
        first_compute.append(float(c.reshape(-1)[0]))
        first_memory.append(float(m.reshape(-1)[0]))
        if per_unit:
            terms.append(np.stack([t, v, m]))

    def exact(v: Any) -> np.ndarray:  # a 0-d object sum comes back as a Python integer
        out = np.empty(shape, dtype=object)
        out[...] = v
        return out

    unit_terms = (np.stack(terms) if terms else np.zeros((0, 3, *shape))) if per_unit else None
    return ModeArrays(seconds, tensor, vector, memory, exact(flops), exact(nbytes), compute,
                      np.array(first_compute), np.array(first_memory), unit_terms)


@dataclass
class Sweep:
    """The result of `CostSurface.grid`: per target and mode, arrays over the grid (axes in `swept` order)."""

    surface: CostSurface
    swept: tuple[str, ...]
    axes: dict[str, list[int]]
    env: Mapping[str, np.ndarray]
    arrays: dict[str, dict[str, ModeArrays]]  # target name -> mode -> arrays

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(self.axes[n]) for n in self.swept)

    def points(self) -> Iterable[tuple[tuple[int, ...], dict[str, int]]]:
        for index in np.ndindex(*self.shape):
            yield index, {n: int(self.env[n][index]) for n in self.surface.params}

    def costs(self) -> list[PointCost]:
        """Every point, target and mode (point-major, then target, then mode)."""
        out = []
        for index, point in self.points():
            for target, modes in self.arrays.items():
                for mode, a in modes.items():
                    out.append(PointCost(mode, float(a.seconds[index]), float(a.tensor_s[index]),
                                         float(a.vector_s[index]), float(a.memory_s[index]),
                                         exact_int(a.flops[index]), exact_int(a.bytes[index]), point=point,
                                         target=target))
        return out

    def records(self) -> list[dict[str, Any]]:
        return [c.as_record() for c in self.costs()]

    def factors(self, latency_s: float) -> dict[str, dict[str, dict[str, np.ndarray]]]:
        """At each point, the inverse roofline (docs/sol.md): compute, bandwidth and both factors per mode."""
        out: dict[str, dict[str, dict[str, np.ndarray]]] = {}
        for target, modes in self.arrays.items():
            out[target] = {mode: {"compute_factor": a.compute_s / latency_s,
                                  "bandwidth_factor": a.memory_s / latency_s,
                                  "both_factor": a.seconds / latency_s} for mode, a in modes.items()}
        return out


def exact_int(v: Any) -> int:
    """A count as a whole number: a mean over runs (a Fraction) rounds as `Work.flops` does; no figure
    (NaN, a target without the cache-aware mode) is 0."""
    if isinstance(v, float) and not math.isfinite(v):
        return 0
    return round(v)


# ---- crossover ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Crossover:
    """Where a mode's bound changes kind along one size: `below` holds at `value - 1`, `above` at `value`
    (the sizes not swept at their defaults, the other swept ones at `at`)."""

    param: str
    target: str
    mode: str
    value: int
    below: str
    above: str
    at: dict[str, int] = dataclasses.field(default_factory=dict)  # the other swept sizes along this line

    def as_record(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def crossover(surface: CostSurface, param: str, target: str, mode: str, lo: int, hi: int,
              fixed: Mapping[str, int] | None = None, grid: Sequence[int] | None = None) -> list[Crossover]:
    """The exact sizes of `param` in [lo, hi] at which `mode` on `target` changes bound kind (memory to
    compute, or back), the other sizes at `fixed` (else their defaults). Each change between two grid
    values (`grid`, default powers of two) is located exactly by bisection on single points."""
    if lo > hi:
        raise SweepError(f"empty range {lo}..{hi} for {param}")
    base = dict(fixed or {})
    values = sorted({lo, hi, *(v for v in (grid or _powers(lo, hi)) if lo <= v <= hi)})
    kinds = [_kind(surface, {**base, param: v}, target, mode) for v in values]
    return _changes(surface, param, target, mode, base, values, kinds)


def crossovers(sweep: Sweep, max_lines: int = 64) -> list[Crossover]:
    """Every change of bound kind along each swept size, for every target and mode: along each line of the
    grid (the other swept sizes fixed; the first `max_lines` lines of each size), located exactly."""
    out: list[Crossover] = []
    for axis, param in enumerate(sweep.swept):
        values = sweep.axes[param]
        if len(values) < 2:
            continue
        others = [n for n in sweep.swept if n != param]
        for target, modes in sweep.arrays.items():
            for mode, a in modes.items():
                kinds = np.moveaxis(a.bounds(), axis, -1).reshape(-1, len(values))
                for line, index in enumerate(np.ndindex(*[len(sweep.axes[n]) for n in others])):
                    if line >= max_lines:
                        break
                    fixed = {n: sweep.axes[n][i] for n, i in zip(others, index, strict=True)}
                    out.extend(_changes(sweep.surface, param, target, mode, fixed, values,
                                        [str(k) for k in kinds[line]]))
    return out


def _kind(surface: CostSurface, point: Mapping[str, int], target: str, mode: str) -> str:
    a = surface.grid({k: [v] for k, v in point.items()}).arrays[target][mode]
    return str(a.bounds().reshape(-1)[0])


def _compute_or_memory(kind: str) -> str:
    return "memory" if kind == "memory" else "compute"


def _changes(surface: CostSurface, param: str, target: str, mode: str, fixed: Mapping[str, int],
             values: Sequence[int], kinds: Sequence[str]) -> list[Crossover]:
    """Each change of kind between neighbouring `values`, bisected to the least size of the new kind."""
    out: list[Crossover] = []
    for k in range(len(values) - 1):
        (a, ka), (b, kb) = (values[k], kinds[k]), (values[k + 1], kinds[k + 1])
        if "none" in (ka, kb) or _compute_or_memory(ka) == _compute_or_memory(kb):
            continue
        left, right, k_right = a, b, kb
        while right - left > 1:
            mid = (left + right) // 2
            km = _kind(surface, {**fixed, param: mid}, target, mode)
            if _compute_or_memory(km) == _compute_or_memory(ka):
                left = mid
            else:
                right, k_right = mid, km
        out.append(Crossover(param, target, mode, right, ka, k_right, dict(fixed)))
    return out


def _powers(lo: int, hi: int) -> list[int]:
    out, v = [], 1
    while v <= hi:
        if v >= lo:
            out.append(v)
        v *= 2
    return out
