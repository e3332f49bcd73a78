"""What `--sweep`, `--sol-formula` and `--design-space` print and write: the compact terminal table, the
JSON document (schema `solar.sweep-report`, version 1; docs/sweeps.md) and the plots.

`run_sweep` is the one call the --sol pass makes: it evaluates the grid on a `CostSurface`, finds the
crossovers, the inverse roofline at every point (with a latency) and the design space (with one), and
returns a `SweepOutcome` that the renderers read.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solar.ir.analysis.formula import Formula
from solar.ir.outputs import atomic_open, save_figure
from solar.ir.tables import new_table, render_tables

from .design_space import Design, explore, render_designs
from .precision_policy import policy_text
from .report import format_axis, quantity, seconds, strict_json
from .sweep import CostSurface, Crossover, Sweep, crossovers, exact_int
from .sweep_spec import DesignSpace

SCHEMA = "solar.sweep-report"
VERSION = 1
TABLE_ROWS = 24  # the terminal shows at most this many points (evenly spaced, first and last included)
CROSSOVER_LINES = 4  # and at most this many crossovers per target, mode and swept size


@dataclass
class SweepOutcome:
    sweep: Sweep
    crossovers: list[Crossover]
    latency_s: float | None = None
    designs: list[Design] = field(default_factory=list)


def run_sweep(surface: CostSurface, axes: dict[str, list[int]], latency_s: float | None = None,
              design: DesignSpace | None = None) -> SweepOutcome:
    surface.check_swept(axes)
    sweep = surface.grid(axes)
    outcome = SweepOutcome(sweep, crossovers(sweep), latency_s)
    if design is not None and latency_s is not None:
        outcome.designs = explore(surface, surface.point({k: v[0] for k, v in axes.items()}), latency_s, design)
    return outcome


# ---- formulas ----------------------------------------------------------------------------------------


def formula_text(value: Formula | int) -> str:
    return str(value)


def mode_formulas(surface: CostSurface) -> dict[str, dict[str, str]]:
    """Per mode: FLOPs on tensor and vector units and DRAM bytes as formulas in the size parameters."""
    return {mode: {k: formula_text(v) for k, v in surface.formulas(mode).items()} for mode in surface.modes
            if mode in ("unfused", "fused", "whole_graph")}


def formulas_json(surface: CostSurface) -> dict[str, Any] | None:
    """The `formulas` field of the --sol JSON (with --sol-formula): per mode, and per unit and group, the
    FLOPs on tensor and vector units and the DRAM bytes as text in the size parameters; null when the
    counts have no closed form (`per_point_reason` says why)."""
    if not surface.symbolic:
        return {"modes": None, "units": None, "groups": None, "per_point_reason": surface.per_point_reason}

    def work(w: Any) -> dict[str, str]:
        return {"name": w.name, "flops_tensor": formula_text(sum(w.tensor.values(), 0)),
                "flops_vector": formula_text(sum(w.vector.values(), 0)), "bytes": formula_text(w.bytes)}

    return {"params": list(surface.params), "modes": mode_formulas(surface),
            "units": [work(w) for w in surface.units], "groups": [work(w) for w in surface.groups],
            "per_point_reason": None}


def render_formulas(surface: CostSurface) -> str:
    """The roofline of each mode as `max(F/Π, B/β)`, with the formulas and each target's peaks."""
    if not surface.symbolic:
        return f"No formulas: {surface.per_point_reason} (the sweep counts at each point).\n"
    lines = ["SOL formulas (t = max(F_tensor/Π_tensor, F_vector/Π_vector, B/β); sizes ≥ 1):"]
    for mode, f in mode_formulas(surface).items():
        lines.append(f"  {mode}:")
        lines.append(f"    F_tensor = {f['flops_tensor']}")
        lines.append(f"    F_vector = {f['flops_vector']}")
        lines.append(f"    B        = {f['bytes']}")
    if surface.symbolic:
        lines.append("  (unfused and fused take the max per unit or group and sum: Σ max(...), at least the "
                     "max of the sums)")
    for peaks in surface.peaks:
        used = {(c.precision, c.unit): c.flop_per_s for w in surface.units for counts, tc in
                ((w.tensor, True), (w.vector, False)) for d in counts for c in [peaks.choice(d, tc)]}
        roofs = ", ".join(f"Π({p} {u}) = {quantity(v, 'FLOP/s')}" for (p, u), v in sorted(used.items()))
        lines.append(f"  {peaks.target.name}: β = {quantity(peaks.bandwidth, 'B/s')}" + (f", {roofs}" if roofs else ""))
    return "\n".join(lines) + "\n"


# ---- the terminal ----------------------------------------------------------------------------------------


def _rows(n: int) -> list[int]:
    if n <= TABLE_ROWS:
        return list(range(n))
    return sorted({round(k * (n - 1) / (TABLE_ROWS - 1)) for k in range(TABLE_ROWS)})


def render_sweep(outcome: SweepOutcome) -> str:
    """The compact table (at most TABLE_ROWS points), the crossovers, the factors and the design space."""
    if not outcome.sweep.swept:  # --design-space alone: at the sizes' defaults
        return render_designs(outcome.designs) if outcome.designs else ""
    sweep = outcome.sweep
    columns = [(t, m, a, a.bounds()) for t, modes in sweep.arrays.items() for m, a in modes.items()]
    total = math.prod(sweep.shape)
    shown = _rows(total)
    title = f"Sweep: {total:,} points × {len(sweep.arrays)} targets × {len(columns) // len(sweep.arrays)} modes"
    if len(shown) < total:
        title += f" ({len(shown)} shown; every point is in --sweep-report)"
    table = new_table(title, [*sweep.swept, *(f"{t} {m}" for t, m, _, _ in columns)], text_columns=0)
    for k in shown:
        index = np.unravel_index(k, sweep.shape)
        table.add_row(*(f"{int(sweep.env[n][index]):,}" for n in sweep.swept),
                      *(f"{seconds(float(a.seconds[index]))} {b[index][0] if b[index] != 'none' else '-'}"
                        for _, _, a, b in columns))
    notes = ["(t = tensor-, v = vector-, m = memory-bound)"]
    if not sweep.surface.symbolic:
        notes.append(f"counted at each point: {sweep.surface.per_point_reason}")
    if outcome.crossovers:
        notes.append("Crossovers (the least size at which the bound changes kind):")
        shown: dict[tuple[str, str, str], int] = {}
        for c in outcome.crossovers:
            key = (c.target, c.mode, c.param)
            shown[key] = shown.get(key, 0) + 1
            if shown[key] > CROSSOVER_LINES:
                continue
            at = ", ".join(f"{k}={v}" for k, v in c.at.items())
            notes.append(f"  {c.target} {c.mode}: {c.below} → {c.above} at {c.param} = {c.value:,}"
                         + (f" ({at})" if at else ""))
        hidden = sum(n - CROSSOVER_LINES for n in shown.values() if n > CROSSOVER_LINES)
        if hidden:
            notes.append(f"  … and {hidden:,} more along other lines of the grid (every one is in --sweep-report)")
    else:
        notes.append("No crossover: every mode keeps its bound kind over the grid.")
    if outcome.latency_s is not None:
        notes.append(_factor_lines(outcome, shown))
    out = render_tables([table, *notes])
    if outcome.designs:
        out += render_designs(outcome.designs)
    return out


def _factor_lines(outcome: SweepOutcome, shown: list[int]) -> str:
    """The least common speed-up needed at the first and last point, and where each mode meets the latency."""
    assert outcome.latency_s is not None
    factors = outcome.sweep.factors(outcome.latency_s)
    lines = [f"Inverse roofline for {seconds(outcome.latency_s)} (× both needed; ≤ 1 meets it):"]
    for target, modes in factors.items():
        for mode, f in modes.items():
            both = f["both_factor"].reshape(-1)
            meets = int(np.sum(both <= 1))
            first, last = quantity(float(both[0])), quantity(float(both[-1]))  # ×1.23k, never ×1.23e+03
            lines.append(f"  {target} {mode}: ×{first} at the first point, ×{last} at the last; "
                         f"meets the latency at {meets:,} of {both.size:,} points")
    return "\n".join(lines)


# ---- JSON ------------------------------------------------------------------------------------------------


RECORD_CHUNK = 4096  # points per chunk of records: the report is written a chunk at a time


def _header(outcome: SweepOutcome, module_name: str) -> dict[str, Any]:
    """The report's fields, `records` still empty (filled by `record_chunks`)."""
    sweep = outcome.sweep
    surface = sweep.surface
    return {
        "schema": SCHEMA, "version": VERSION, "module": module_name, "params": dict(surface.defaults),
        "swept": sweep.axes, "targets": [p.target.name for p in surface.peaks], "modes": list(surface.modes),
        "symbolic": surface.symbolic, "per_point_reason": surface.per_point_reason,
        "fp32_precision": surface.fp32_precision, "precision_floor": surface.precision_floor,
        "precision_policy": policy_text(surface.fp32_precision, surface.precision_floor),
        "formulas": mode_formulas(surface) if surface.symbolic else None,
        "latency_s": outcome.latency_s, "records": [],
        "crossovers": [c.as_record() for c in outcome.crossovers],
        "design_space": [d.as_record() for d in outcome.designs] or None,
    }


def _finite(values: np.ndarray) -> list[float | None]:
    """Floats as JSON takes them: NaN and infinities become null (docs/sol.md)."""
    out = values.astype(object)
    out[~np.isfinite(values)] = None
    return out.tolist()


def record_chunks(outcome: SweepOutcome) -> Iterator[list[dict[str, Any]]]:
    """The records (point-major, then target, then mode), RECORD_CHUNK points at a time: a million-point
    grid's records are never all in memory at once."""
    sweep = outcome.sweep
    names = sweep.surface.params
    size = math.prod(sweep.shape)
    env = {n: sweep.env[n].reshape(-1) for n in names}
    factors = sweep.factors(outcome.latency_s) if outcome.latency_s is not None else None
    columns = []
    for target, modes in sweep.arrays.items():
        for mode, a in modes.items():
            floats = {"time_s": a.seconds, "tensor_s": a.tensor_s, "vector_s": a.vector_s, "memory_s": a.memory_s,
                      **(factors[target][mode] if factors is not None else {})}
            columns.append((target, mode, a.bounds().reshape(-1), a.flops.reshape(-1), a.bytes.reshape(-1),
                            {k: v.reshape(-1) for k, v in floats.items()}))
    for start in range(0, size, RECORD_CHUNK):
        part = slice(start, min(size, start + RECORD_CHUNK))
        points = [dict(zip(names, values, strict=True))
                  for values in zip(*([int(v) for v in env[n][part]] for n in names), strict=True)]
        per_column = []
        for target, mode, bounds, flops, nbytes, floats in columns:
            f = {k: _finite(v[part]) for k, v in floats.items()}
            per_column.append((target, mode, bounds[part].tolist(), [exact_int(v) for v in flops[part]],
                               [exact_int(v) for v in nbytes[part]], f))
        chunk = []
        for k, point in enumerate(points):
            for target, mode, bounds, flops, nbytes, f in per_column:
                rec = {"point": point, "target": target, "mode": mode, "time_s": f["time_s"][k],
                       "bound": str(bounds[k]), "flops": flops[k], "bytes": nbytes[k],
                       "tensor_s": f["tensor_s"][k], "vector_s": f["vector_s"][k], "memory_s": f["memory_s"][k]}
                if factors is not None:
                    rec.update({name: f[name][k] for name in ("compute_factor", "bandwidth_factor", "both_factor")})
                chunk.append(rec)
        yield chunk


def sweep_json(outcome: SweepOutcome, module_name: str) -> dict[str, Any]:
    """The whole report as one document (Python callers; `write_sweep_report` streams it to a file)."""
    doc = _header(outcome, module_name)
    doc["records"] = [rec for chunk in record_chunks(outcome) for rec in chunk]
    return doc


def write_sweep_report(outcome: SweepOutcome, module_name: str, path: str) -> None:
    """The report as strict JSON, written atomically and a chunk of records at a time (one record a line):
    memory stays that of the grid's arrays, not of its millions of records."""
    header = strict_json(_header(outcome, module_name))
    with atomic_open(path, "w", "the sweep report") as out:
        out.write("{")
        for k, (key, value) in enumerate(header.items()):
            out.write(("," if k else "") + f"\n {json.dumps(key)}: ")
            if key != "records":
                out.write(json.dumps(value, allow_nan=False))
                continue
            out.write("[")
            first = True
            for chunk in record_chunks(outcome):
                if chunk:
                    out.write(("\n  " if first else ",\n  ") + ",\n  ".join(json.dumps(r, allow_nan=False)
                                                                             for r in chunk))
                    first = False
            out.write("\n ]" if not first else "]")
        out.write("\n}\n")


def curves(outcome: SweepOutcome) -> list[dict[str, Any]]:
    """The HTML report's curves (html_svg.curves_svg), read from the grid's arrays (not from the records):
    per target and swept size, each mode's time along that size, the other swept sizes at their first value."""
    sweep = outcome.sweep
    out = []
    for target, modes in sweep.arrays.items():
        for axis, name in enumerate(sweep.swept):
            if len(sweep.axes[name]) < 2:
                continue
            line = tuple(slice(None) if k == axis else 0 for k in range(len(sweep.swept)))
            series = {mode: _finite(a.seconds[line]) for mode, a in modes.items()}
            out.append({"name": f"{target}: SOL against {name}", "x": name, "points": sweep.axes[name],
                        "series": {m: [0.0 if t is None else t for t in ts] for m, ts in series.items()}})
    return out


# ---- the plot --------------------------------------------------------------------------------------------


_DASHES = ("-", "--", "-.", ":")
_MARKERS = (".", "x", "+", "1")


def _distinct_series(modes: dict[str, Any], first: tuple[Any, ...]) -> list[tuple[str, list[str], Any]]:
    """(first mode, every mode with the same times, the times) for each distinct curve, in mode order."""
    out: list[tuple[str, list[str], Any]] = []
    for mode, a in modes.items():
        ys = a.seconds[first]
        same = next((entry for entry in out if np.array_equal(entry[2], ys)), None)
        if same is not None:
            same[1].append(mode)
        else:
            out.append((mode, [mode], ys))
    return out


def plot_sweep(outcome: SweepOutcome, path: str) -> None:
    """SOL against the first swept size (the others at their first value), one line per target and mode,
    log axes, each memory→compute crossover marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sweep = outcome.sweep
    x_name = sweep.swept[0]
    xs = sweep.axes[x_name]
    first = (slice(None), *([0] * (len(sweep.swept) - 1)))
    fig, ax = plt.subplots(figsize=(8, 5))
    for target, modes in sweep.arrays.items():
        for k, (mode, same, ys) in enumerate(_distinct_series(modes, first)):
            # Coinciding modes are one line named for all of them (`fused = whole graph`); the others differ
            # in dash and marker too, so a line drawn over another still shows.
            line, = ax.plot(xs, ys, linestyle=_DASHES[k % len(_DASHES)], marker=_MARKERS[k % len(_MARKERS)]
                            if len(xs) < 64 else None, label=f"{target} {' = '.join(same)}")
            for c in outcome.crossovers:
                if c.target == target and c.mode == mode and c.param == x_name and \
                        all(v == sweep.axes[k][0] for k, v in c.at.items()):
                    y = float(np.interp(c.value, xs, ys))
                    ax.axvline(c.value, color=line.get_color(), linestyle=":", linewidth=1)
                    ax.annotate(f"{c.below}→{c.above} at {c.value:,}", (c.value, y), fontsize=7,
                                xytext=(4, -10), textcoords="offset points", color=line.get_color())
    if all(x > 0 for x in xs) and len(xs) > 1:
        ax.set_xscale("log")
    ax.set_yscale("log")
    fixed = ", ".join(f"{n}={sweep.axes[n][0]}" for n in sweep.swept[1:])
    ax.set_xlabel(x_name + (f" ({fixed})" if fixed else ""))
    ax.set_ylabel("speed of light")
    format_axis(ax.yaxis, seconds)
    format_axis(ax.xaxis, quantity)
    if outcome.latency_s is not None:
        ax.axhline(outcome.latency_s, color="gray", linestyle="--", linewidth=1, label="target latency")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    try:
        save_figure(fig, path, "the sweep plot", dpi=120)
    finally:
        plt.close(fig)
