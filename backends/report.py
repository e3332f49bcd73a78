"""SOL reports: the terminal tables (rich), the versioned JSON document and the roofline plot."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from io import StringIO
from typing import Any

from rich.console import Console
from rich.table import Table

from solar.backends.cost import CostModel, Inverse, Peaks, Timing, Work, inverse_roofline
from solar.backends.mode_results import ModeResult, mode_result
from solar.backends.precision_policy import policy_text
from solar.ir import attr_names
from solar.ir.diagnostics import Location
from solar.ir.outputs import save_figure, write_text_atomic
from solar.ir.plain_tables import print_table

SCHEMA = "solar.sol-report"
VERSION = 1
MODES = ("unfused", "fused", "whole_graph")


@dataclass
class CacheAware:
    """The cache-aware mode of one target: per fusion group (a unit outside every group is its own), the
    traffic every schedule moves under the buffer (a bound), and beside it the best tiling found (an
    estimate, not a bound)."""

    buffer: float
    label: str
    works: list[Work]  # per group, its bytes the cache-aware ones
    originals: list[Work]  # the CostModel's Work of each group, in the same order
    rows: list[dict[str, Any]]  # per group: name, bytes (the bound), bound, fused_bytes, estimate_bytes, gap, …
    mode: ModeResult | None = None  # set once the works are timed on the target


@dataclass
class TargetReport:
    """Everything the SOL backend computed for one target."""

    peaks: Peaks
    units: list[tuple[Work, Timing]]
    groups: list[tuple[Work, Timing]]
    modes: dict[str, ModeResult]
    inverse: dict[str, Inverse] | None
    cache_aware: CacheAware | None = None  # set by tiling_ir.add_cache_aware after --tile-search
    before_reorder: TargetReport | None = None  # the same program in its written order, after --reorder-einsum

    @property
    def name(self) -> str:
        return self.peaks.target.name

    @property
    def fusion_gain(self) -> float:
        fused = self.modes["fused"].seconds
        return self.modes["unfused"].seconds / fused if fused > 0 else 1.0


def analyse(model: CostModel, peaks: Peaks, latency_s: float | None) -> TargetReport:
    whole = model.whole_graph()
    modes = {
        "unfused": mode_result("unfused", model.units, peaks),
        "fused": mode_result("fused", model.groups, peaks),
        "whole_graph": mode_result("whole_graph", [whole], peaks),
    }
    inverse = None
    if latency_s is not None:
        works = {"unfused": model.units, "fused": model.groups, "whole_graph": [whole]}
        inverse = {m: inverse_roofline(m, works[m], peaks, latency_s) for m in MODES}
    return TargetReport(peaks, [(w, peaks.time(w)) for w in model.units],
                        [(w, peaks.time(w)) for w in model.groups if w.kind == "group"], modes, inverse)


# ---- naming units ---------------------------------------------------------------------------------


def unit_location(work: Work) -> Location | None:
    """The frontend's location of a unit: that of its first op that has one."""
    return next((op.src_loc for op in work.ops if op.src_loc is not None), None)


def unit_module(work: Work) -> str | None:
    """The model's module that made a unit (`attn.qkv`), where its frontend recorded one."""
    return next((str(op.attrs[attr_names.MODULE_PATH]) for op in work.ops
                 if attr_names.MODULE_PATH in op.attrs), None)


def unit_label(work: Work) -> str:
    """A unit as the tables name it: its module path when known, else its SIR name."""
    return unit_module(work) or work.name


def short_path(file: str) -> str:
    """A path relative to the working directory when it is inside it, else as it is."""
    try:
        rel = os.path.relpath(file)
    except ValueError:
        return file
    return file if rel.startswith("..") else rel


def unit_place(work: Work) -> str:
    """`file:line` of a unit's source (relative to the working directory where it can be), or ''."""
    loc = unit_location(work)
    return f"{short_path(loc.file)}:{loc.line}" if loc is not None else ""


# ---- formatting -----------------------------------------------------------------------------------


def seconds(t: float) -> str:
    """A time as every output writes it: `1.94 ms`, `262 µs` (never scientific notation)."""
    if t == 0:
        return "0"
    if t >= 999.5:
        return f"{t:,.0f} s"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if t >= scale * 0.9995:
            return f"{t / scale:.3g} {unit}"
    return f"{t / 1e-12:.3g} ps"


def ratio(v: float) -> str:
    """A ratio (headroom, a gain) as every output writes it: `7.4×`, `1,234×` (never `1.23e+03×`)."""
    return f"{v:.3g}×" if abs(v) < 999.5 else f"{v:,.0f}×"


_LARGE = (("E", 1e18), ("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))
_SMALL = (("m", 1e-3), ("µ", 1e-6), ("n", 1e-9), ("p", 1e-12))


def quantity(n: float, unit: str = "") -> str:
    """The one formatter of counts and rates: three significant figures with an SI prefix up to E, never in
    scientific notation; with a unit, a space before it (`2.25 PFLOP/s`, `3.35 MB`), without one the bare
    prefix as table cells show counts (`67.1M`)."""
    sep = " " if unit else ""
    if n == 0 or not math.isfinite(n):
        return f"{n:g}{sep}{unit}" if isinstance(n, float) else f"{n}{sep}{unit}"
    for prefix, scale in _LARGE:
        if abs(n) >= scale * 0.9995:  # 999.7k reads 1M, never 1e+03k
            value = n / scale
            text = f"{value:.3g}" if abs(value) < 999.5 else f"{value:.0f}"  # past E: whole exa-units
            return f"{text}{sep}{prefix}{unit}"
    if abs(n) < 0.9995 and isinstance(n, float) and unit:
        for prefix, scale in _SMALL:
            if abs(n) >= scale * 0.9995:
                return f"{n / scale:.3g}{sep}{prefix}{unit}"
    text = f"{n:.3g}" if isinstance(n, float) else str(n)
    return f"{text}{sep}{unit}" if "e" not in text else f"{n:.6f}".rstrip("0") + f"{sep}{unit}"


def format_axis(axis: Any, label: Any) -> None:
    """A matplotlib axis whose ticks read as `label` writes them (`quantity`, `seconds`): no tick says `10^-5`
    or `1e+03`. A log axis spanning less than 20× (one decade tick or none) also labels its 2× and 5× minor
    ticks, so that it is never read off a single label."""
    from matplotlib.ticker import FuncFormatter

    def minor(v: float, _pos: Any) -> str:
        lo, hi = sorted(axis.get_view_interval())
        if axis.get_scale() != "log" or lo <= 0 or v <= 0 or hi / lo > 20:
            return ""
        mantissa = v / 10 ** math.floor(math.log10(v) + 1e-9)
        return label(v) if round(mantissa, 6) in (2.0, 5.0) else ""

    axis.set_major_formatter(FuncFormatter(lambda v, _pos: label(v)))
    axis.set_minor_formatter(FuncFormatter(minor))


def _format_intensity(w: Work) -> str:
    """`Work.intensity` (the one definition: FLOPs per DRAM byte) as the tables print it."""
    ai = w.intensity
    return "∞" if math.isinf(ai) else quantity(ai)  # 1.37k, never 1.37e+03


_LABELS = {"unfused": "unfused (Σ kernels)", "fused": "fused (Σ groups)", "whole_graph": "whole graph"}


def render_report(reports: list[TargetReport], module_name: str) -> str:
    """The terminal tables: units, the peaks they are priced at, fusion groups, totals, the cache-aware
    bound and the inverse roofline (each where it applies), every target side by side."""
    buf = StringIO()
    # Wide enough that no table wraps its cells (several targets side by side); tables keep their own width.
    console = Console(file=buf, width=1000, color_system=None)
    first = reports[0]
    print_table(console, _works_table(f"Speed of light of @{module_name}: units of execution (unfused)", "unit",
                                      reports, [w for w, _ in first.units], [[t for _, t in r.units] for r in reports],
                                      kind=True))
    if any(w.flops for w, _ in first.units):
        print_table(console, _peaks_table(reports))
    if first.groups:
        print_table(console, _works_table("Fusion groups", "group", reports, [w for w, _ in first.groups],
                                          [[t for _, t in r.groups] for r in reports], kind=False))
    print_table(console, _totals_table(reports))
    aware = [r.cache_aware for r in reports if r.cache_aware is not None]
    if aware:
        console.print("cache-aware: each group at a bound on the traffic every schedule moves under a buffer of "
                      + ", ".join(f"{quantity(r.cache_aware.buffer, 'B')} ({r.cache_aware.label}) on {r.name}"
                                  for r in reports if r.cache_aware is not None)
                      + "; bytes column: the first of them.")
        print_table(console, _cache_aware_table(aware[0]))
    if first.inverse is not None:
        print_table(console, _inverse_table(reports))
        console.print("compute ×: the factor every compute peak needs with infinitely fast memory; bandwidth ×: "
                      "the DRAM bandwidth factor with infinitely fast compute; both ×: the common factor on both "
                      "(≤ 1: the target already meets the latency).")
    return buf.getvalue()


def _works_table(title: str, first_col: str, reports: list[TargetReport], works: list[Work],
                 timings: list[list[Timing]], kind: bool) -> Table:
    """Units or groups: counts (contraction FLOPs are those tensor cores may run), then each target's time."""
    table = Table(title=title, title_justify="left")
    places = [unit_place(w) for w in works] if kind else []
    for col in (first_col, *(("kind",) if kind else ()), "contraction FLOPs", "other FLOPs", "bytes", "FLOP/B"):
        table.add_column(col, justify="left" if col in (first_col, "kind") else "right")
    for r in reports:
        table.add_column(f"{r.name} time", justify="right")
        table.add_column("bound")
    if any(places):  # frontends' units: their source line beside their name
        table.add_column("source")
    for k, w in enumerate(works):
        name = (unit_label(w) if kind else w.name) + (f" ×{w.trips}" if w.trips > 1 and kind else "")
        row = [name, *((w.kind,) if kind else ()), quantity(sum(w.flops_tensor.values()) * w.trips),
               quantity(sum(w.flops_vector.values()) * w.trips), quantity(w.total_bytes), _format_intensity(w)]
        for per_target in timings:
            row += [seconds(per_target[k].seconds), per_target[k].bound]
        table.add_row(*row, *([places[k]] if any(places) else []))
    return table


def _peaks_table(reports: list[TargetReport]) -> Table:
    """The peak behind every unit's compute time (docs/sol.md, "Which peak"): an f32 convolution that the
    framework runs on TF32 tensor cores reads "tf32 tensor"."""
    first = reports[0]
    table = Table(title="Peaks used (the precision and unit FLOPs are priced at)", title_justify="left")
    table.add_column("unit")
    for r in reports:
        table.add_column(f"{r.name} peaks")
    for k, (w, _) in enumerate(first.units):
        if w.flops:
            table.add_row(unit_label(w), *(_peak_text(r.units[k][0], r.peaks) for r in reports))
    return table


def _totals_table(reports: list[TargetReport]) -> Table:
    """The modes' totals, the fusion gain, and (where computed) the cache-aware mode and the written order."""
    first = reports[0]
    totals = Table(title="Totals", title_justify="left")
    totals.add_column("mode")
    totals.add_column("FLOPs", justify="right")
    totals.add_column("bytes", justify="right")
    for r in reports:
        totals.add_column(f"{r.name} SOL", justify="right")
        totals.add_column("bound")
    for m in MODES:
        res = first.modes[m]
        row = [_LABELS[m], quantity(res.flops), quantity(res.bytes)]
        for r in reports:
            row += [seconds(r.modes[m].seconds), r.modes[m].bound]
        totals.add_row(*row)
    gain = ["fusion gain (unfused ÷ fused)", "", ""]
    for r in reports:
        gain += [f"{r.fusion_gain:.2f}×", ""]
    totals.add_row(*gain)
    aware = [r.cache_aware for r in reports if r.cache_aware is not None]
    if aware:
        # The cache-aware mode exists only after --tile-search (docs/sol.md, "Cache-aware mode"); its row
        # comes last so that the three modes above read as they always have.
        row = ["cache-aware (Σ groups)", quantity(aware[0].mode.flops), quantity(aware[0].mode.bytes)]
        for r in reports:
            ca = r.cache_aware
            row += [seconds(ca.mode.seconds), ca.mode.bound] if ca is not None else ["n/a", ""]
        totals.add_row(*row)
    if first.before_reorder is not None:
        # After --reorder-einsum (docs/reorder.md): the program as written, and what the new order gains.
        for m in MODES:
            res = first.before_reorder.modes[m]
            row = [f"before reorder: {_LABELS[m]}", quantity(res.flops), quantity(res.bytes)]
            for r in reports:
                b = r.before_reorder
                row += [seconds(b.modes[m].seconds), b.modes[m].bound] if b is not None else ["n/a", ""]
            totals.add_row(*row)
        gain = ["reorder gain (before ÷ after, fused)", "", ""]
        for r in reports:
            gain += [f"{reorder_gain(r)['fused']:.2f}×" if r.before_reorder is not None else "", ""]
        totals.add_row(*gain)
    return totals


def _inverse_table(reports: list[TargetReport]) -> Table:
    first = reports[0]
    assert first.inverse is not None
    inv = Table(title=f"Inverse roofline for a latency of {seconds(first.inverse['unfused'].latency_s)}",
                title_justify="left")
    inv.add_column("mode")
    for r in reports:
        inv.add_column(f"{r.name}: compute ×", justify="right")
        inv.add_column("bandwidth ×", justify="right")
        inv.add_column("both ×", justify="right")
    for m in MODES:
        row = [_LABELS[m]]
        for r in reports:
            assert r.inverse is not None
            i = r.inverse[m]
            row += [quantity(i.compute_factor), quantity(i.bandwidth_factor), quantity(i.both_factor)]
        inv.add_row(*row)
    return inv


def _cache_aware_table(ca: CacheAware) -> Table:
    """Per group: the cache-aware bound and the argument that gives it, and apart from it the best tiling
    found, an estimate that a real schedule may beat, with the gap between them (docs/tiling.md)."""
    table = Table(title=f"Cache-aware bound per group ({quantity(ca.buffer, 'B')}, {ca.label}); the best tiling found "
                  "is an estimate, not a bound", title_justify="left")
    for col in ("group", "fused bytes", "cache-aware bound", "bound from", "best tiling found (estimate)",
                "gap (estimate ÷ bound)"):
        table.add_column(col, justify="left" if col in ("group", "bound from") else "right")
    for row in ca.rows:
        estimate = row["estimate_bytes"]
        table.add_row(row["name"], quantity(row["fused_bytes"]), quantity(row["bytes"]), row["bound"],
                      "n/a" if estimate is None else f"{quantity(estimate)} ({row['strategy']})",
                      "n/a" if row["gap"] is None else f"{row['gap']:.2f}×")
    return table


# ---- JSON -----------------------------------------------------------------------------------------


def peaks_used(w: Work, peaks: Peaks) -> list[dict[str, Any]]:
    """The peak each part of a unit's work is priced at: f32 contractions appear under the precision they
    are priced at (tf32 when the framework runs them on TF32 tensor cores), with the choice's reason."""
    out = []
    for work, flops, contraction in (("tensor", w.flops_tensor, True), ("vector", w.flops_vector, False)):
        for d, n in flops.items():
            if not n:
                continue
            c = peaks.choice(d, contraction)
            out.append({"work": work, "dtype": d.spelling, "precision": c.precision, "unit": c.unit,
                        "flop_per_s": c.flop_per_s, "reason": c.reason})
    return out


def _peak_text(w: Work, peaks: Peaks) -> str:
    kinds = {"tensor": "contractions", "vector": "other"}
    return "; ".join(f"{kinds[p['work']]} {p['dtype']}: {p['precision']} {p['unit']} "
                     f"{quantity(p['flop_per_s'], 'FLOP/s')}" for p in peaks_used(w, peaks))


def _work_json(w: Work, t: Timing, peaks: Peaks) -> dict[str, Any]:
    return {
        "name": w.name,
        "kind": w.kind,
        "trips": w.trips,
        "flops_tensor": {d.spelling: round(n * w.trips) for d, n in w.flops_tensor.items()},
        "flops_vector": {d.spelling: round(n * w.trips) for d, n in w.flops_vector.items()},
        "bytes": w.total_bytes,
        "intensity": None if math.isinf(w.intensity) else w.intensity,
        "time_s": t.seconds,
        "tensor_s": t.tensor_s,
        "vector_s": t.vector_s,
        "memory_s": t.memory_s,
        "bound": t.bound,
        "peaks": peaks_used(w, peaks),
    }


def to_json(reports: list[TargetReport], module_name: str, params: dict[str, int],
            fp32_precision: str = "framework", precision_floor: str | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"schema": SCHEMA, "version": VERSION, "module": module_name, "params": params,
                           "fp32_precision": fp32_precision, "allow_tf32": fp32_precision == "tf32",
                           "precision_floor": precision_floor,
                           "precision_policy": policy_text(fp32_precision, precision_floor),
                           "targets": []}
    for r in reports:
        doc["targets"].append({
            "name": r.name,
            "full_name": r.peaks.target.full_name,
            "dram_bandwidth": r.peaks.bandwidth,
            "modes": {m: {"time_s": res.seconds, "bound": res.bound, "flops": res.flops, "bytes": res.bytes,
                          "tensor_s": res.tensor_s, "vector_s": res.vector_s, "memory_s": res.memory_s}
                      for m, res in r.modes.items()},
            "fusion_gain": r.fusion_gain,
            "units": [_work_json(w, t, r.peaks) for w, t in r.units],
            "groups": [_work_json(w, t, r.peaks) for w, t in r.groups],
            "inverse": None if r.inverse is None else {
                m: {"latency_s": i.latency_s, "compute_factor": i.compute_factor,
                    "bandwidth_factor": i.bandwidth_factor, "both_factor": i.both_factor,
                    "least_bandwidth": i.least_bandwidth}
                for m, i in r.inverse.items()},
            "cache_aware": _cache_aware_json(r.cache_aware),
            "reorder": _reorder_json(r),
        })
    return doc


def reorder_gain(report: TargetReport) -> dict[str, float]:
    """Time in the written order ÷ time in the reordered one, per mode."""
    before = report.before_reorder
    assert before is not None
    return {m: (before.modes[m].seconds / res.seconds if res.seconds > 0 else 1.0) for m, res in report.modes.items()}


def _reorder_json(r: TargetReport) -> dict[str, Any] | None:
    """After --reorder-einsum: the modes of the program in its written order, and the gain (added in version 1;
    null otherwise)."""
    if r.before_reorder is None:
        return None
    return {"before": {m: {"time_s": res.seconds, "bound": res.bound, "flops": res.flops, "bytes": res.bytes}
                       for m, res in r.before_reorder.modes.items()},
            "gain": reorder_gain(r)}


def _cache_aware_json(ca: CacheAware | None) -> dict[str, Any] | None:
    if ca is None:
        return None
    res = ca.mode
    return {"buffer": ca.label, "buffer_bytes": ca.buffer, "time_s": res.seconds, "bound": res.bound,
            "flops": res.flops, "bytes": res.bytes, "tensor_s": res.tensor_s, "vector_s": res.vector_s,
            "memory_s": res.memory_s, "groups": ca.rows}


def strict_json(value: Any) -> Any:
    """`value` with every NaN or infinite float replaced by null: strict JSON parsers reject `NaN` and
    `Infinity`. (Target figures are finite and positive, so only ratios such as an intensity with no bytes
    get here; docs/sol.md reads null as "no finite value".)"""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict_json(v) for v in value]
    return value


def write_json(doc: dict[str, Any], path: str) -> None:
    """Writes the report atomically, as strict JSON (no `NaN`, no `Infinity`)."""
    text = json.dumps(strict_json(doc), indent=2, allow_nan=False) + "\n"
    write_text_atomic(path, text, "the SOL report")


# ---- the roofline plot ----------------------------------------------------------------------------


def achieved_points(target: str, fused: dict[str, Any], measured: dict[str, Any] | None
                    ) -> list[tuple[float, float, str, float]]:
    """(intensity, achieved FLOP/s, label, fused SOL's FLOP/s) of each framework mode measured on `target`'s
    machine: the whole program at its fused intensity, under the roof its SOL point sits on. `fused`: the
    fused mode's `flops`, `bytes` and `time_s`. A run on a busy machine says so in its label."""
    if not measured or target not in (measured.get("headroom") or {}) or not fused["bytes"] \
            or not fused["flops"] or not fused["time_s"]:
        return []
    noisy = " (noisy)" if measured.get("noisy") else ""
    return [(fused["flops"] / fused["bytes"], fused["flops"] / m["median_s"], f"measured {mode}{noisy}",
             fused["flops"] / fused["time_s"])
            for mode, m in (measured.get("measurements") or {}).items() if m.get("median_s")]


def plot(reports: list[TargetReport], path: str, measured: dict[str, Any] | None = None) -> None:
    """One roofline panel per target, every unit (dots) and fusion group (squares) placed on it at its
    arithmetic intensity and the FLOP rate its SOL time implies; no two labels overlap. After a measurement,
    each framework mode's achieved point (hollow) joined to the fused SOL's."""
    import matplotlib.pyplot as plt

    fig = draw_roofline(reports, measured)
    try:
        save_figure(fig, path, "the roofline plot", dpi=PLOT_DPI)
    finally:
        plt.close(fig)


PLOT_DPI = 120


def draw_roofline(reports: list[TargetReport], measured: dict[str, Any] | None = None) -> Any:
    """The roofline figure (matplotlib, Agg); its point labels are placed by backends/label_layout.py."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(reports), figsize=(8 * len(reports), 5), squeeze=False, dpi=PLOT_DPI)
    panels = []
    for ax, r in zip(axes[0], reports, strict=True):
        beta = r.peaks.bandwidth
        works = [w for w, _ in r.units] + [w for w, _ in r.groups]
        finite = [w.intensity for w in works if w.total_bytes and not math.isinf(w.intensity) and w.intensity > 0]
        lo = min([*finite, 0.1]) / 4
        hi = max([*finite, 1000.0]) * 4
        xs = [lo * (hi / lo) ** (k / 200) for k in range(201)]
        # One roof per peak the program uses (e.g. f32 contractions on FP32 vector units, bf16 on tensor cores).
        roofs = {(c.precision, c.unit): c.flop_per_s for c in r.peaks.used()}
        for (precision, unit), peak in sorted(roofs.items()):
            ax.plot(xs, [min(peak, beta * x) for x in xs], label=f"{precision} {unit}: {quantity(peak, 'FLOP/s')}")
        points = []
        for items, marker in ((r.units, "o"), (r.groups, "s")):
            for w, t in items:
                if not w.total_bytes or t.seconds == 0 or not w.flops:
                    continue
                ax.scatter([w.intensity], [w.flops / t.seconds], marker=marker, zorder=3)
                points.append((w.intensity, w.flops / t.seconds, w.name, t.seconds))
        fused = r.modes["fused"]
        for x, y, label, sol in achieved_points(r.name, {"flops": fused.flops, "bytes": fused.bytes,
                                                         "time_s": fused.seconds}, measured):
            ax.plot([x, x], [y, sol], color="#a33", linestyle="--", linewidth=1, zorder=3)
            ax.scatter([x], [y], s=70, facecolors="white", edgecolors="#a33", linewidths=2, zorder=4,
                       label=f"{label}: {ratio(sol / y)} under the fused SOL")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_xlabel("arithmetic intensity (FLOP/byte)")
        ax.set_ylabel("FLOP/s at the speed of light")
        format_axis(ax.xaxis, quantity)
        format_axis(ax.yaxis, lambda v: quantity(v, "FLOP/s"))
        ax.set_title(f"{r.peaks.target.full_name}: β = {quantity(beta, 'B/s')}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
        panels.append((ax, points))
    # Room right of each panel for the labels that fit nowhere inside it (label_layout's margin column).
    fig.subplots_adjust(left=0.08 / len(reports), right=1 - 0.12 / len(reports), wspace=0.35, bottom=0.12)
    fig.canvas.draw()
    for ax, points in panels:
        _label_points(fig, ax, points)
    return fig


def _label_points(fig: Any, ax: Any, points: list[tuple[float, float, str, float]]) -> None:
    """Labels each point where it overlaps no other label, point or the legend (screen coordinates)."""
    from solar.backends.label_layout import Box, place_labels

    renderer = fig.canvas.get_renderer()
    height = fig.bbox.height
    order = sorted(range(len(points)), key=lambda i: -points[i][3])  # the costliest keeps the nearest place
    screen = []
    for i in order:
        x, y = ax.transData.transform((points[i][0], points[i][1]))
        screen.append((float(x), float(height - y)))
    sizes = []
    for i in order:
        probe = ax.text(0, 0, points[i][2], fontsize=7)
        ext = probe.get_window_extent(renderer)
        probe.remove()
        sizes.append((float(ext.width) + 2, float(ext.height) + 2))
    box = ax.get_window_extent(renderer)
    area = (float(box.x0), float(height - box.y1), float(box.x1), float(height - box.y0))
    legend = ax.get_legend().get_window_extent(renderer)
    obstacles = [Box(float(legend.x0), float(height - legend.y1), float(legend.width), float(legend.height))]
    placed = place_labels(screen, sizes, area, area[2] + 4, point_radius=5.0, obstacles=obstacles)
    to_data = ax.transData.inverted()
    for i, spot in zip(order, placed, strict=True):
        b = spot.box
        # The box's lower-left corner, back in data coordinates (text anchors at its baseline-left).
        anchor = to_data.transform((b.x + 1, height - (b.y + b.h) + 1))
        ax.annotate(points[i][2], (points[i][0], points[i][1]), xytext=(anchor[0], anchor[1]), textcoords="data",
                    fontsize=7, ha="left", va="bottom", annotation_clip=False, gid="point-label",
                    arrowprops={"arrowstyle": "-", "color": "#999", "lw": 0.6} if spot.leader else None)
