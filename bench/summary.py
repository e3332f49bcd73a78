"""What solar-bench prints: one problem's bounds, times and headroom; a batch's summary table (coverage,
median and geometric-mean headroom per mode and framework mode, violations); the headroom plot."""

from __future__ import annotations

import math
import statistics
from io import StringIO
from typing import Any

from rich.console import Console
from rich.table import Table

from solar.backends.report import ratio, seconds

from .bounds import MODE_LABELS as LABELS
from .bounds import MODES
from .headroom_plot import plot_headroom as plot_headroom  # re-exported: the batch's plot lives there
from .measure import FRAMEWORK_MODES
from .problem import beats_of


def _console(buf: StringIO) -> Console:
    return Console(file=buf, width=200, color_system=None)


def render_problem(rec: dict[str, Any]) -> str:
    """One problem: the SOL of every mode on every target, each framework mode's times, and headroom."""
    buf = StringIO()
    console = _console(buf)
    name = rec.get("problem", "?")
    if rec.get("status") != "ok" and "bounds" not in rec:
        return ""  # nothing was bounded: the errors are the whole story (solar-bench prints them on stderr)
    sizes = ", ".join(f"{k}={v}" for k, v in {**rec.get("source_sizes", {}), **rec.get("sizes", {})}.items())
    console.print(f"solar-bench {name} ({rec.get('framework')}; sizes {sizes or 'as written'})", markup=False,
                  highlight=False)
    table = Table()
    table.add_column("mode")
    bounds: dict[str, dict[str, float]] = rec.get("bounds", {})
    for target in bounds:
        table.add_column(f"{target} SOL", justify="right")
    headroom = rec.get("headroom", {})
    measured = [m for m in rec.get("measurements", {}).values() if m.get("min_s") is not None]
    mark = " (noisy)" if rec.get("noisy") else ""  # a busy machine's headroom is never shown unmarked
    for machine, per_fw in headroom.items():
        for fw in per_fw:
            table.add_column(f"{fw} ÷ {machine} SOL{mark}", justify="right")
    for mode in MODES:
        row = [LABELS[mode]]
        row += [seconds(b[mode]) if mode in b else "n/a" for b in bounds.values()]
        for per_fw in headroom.values():
            for ratios in per_fw.values():
                r = ratios.get(mode)
                row.append("n/a" if r is None else f"{ratio(r['median'])} (min {ratio(r['min'])})")
        table.add_row(*row)
    console.print(table)
    for m in rec.get("measurements", {}).values():
        if m.get("min_s") is not None:
            console.print(f"{m['mode']}: median {seconds(m['median_s'])}, min {seconds(m['min_s'])} over {m['runs']} "
                          f"runs ({m['warmup']} warm-up, {m['flush_bytes'] >> 20} MiB cache flush before each; "
                          f"threads {_threads(m['threads'])})", markup=False, highlight=False)
        elif m.get("skipped"):
            console.print(f"{m['mode']}: skipped: {m['skipped']}", markup=False, highlight=False)
        elif m.get("error"):
            console.print(f"{m['mode']}: failed: {m['error']}", markup=False, highlight=False)
    if rec.get("precision_policy"):
        console.print(f"precision policy: {rec['precision_policy']}", markup=False, highlight=False)
    if not measured and rec.get("measurements") == {} and "conditions" not in rec:
        console.print("measurement: skipped (--no-measure)")
    if rec.get("noisy"):
        console.print(noisy_line(rec), markup=False, highlight=False)
    for note in rec.get("notes", []):
        console.print(f"note: {note}", markup=False, highlight=False)
    for beat in beats_of(rec):
        console.print(beat.line(), markup=False, highlight=False)
    return buf.getvalue()


def _threads(t: dict[str, Any]) -> str:
    if "torch_intra_op" in t:
        return f"torch {t['torch_intra_op']} (calibration {t.get('calibration') or 'n/a'})"
    return f"XLA on {t.get('xla_cpus')} CPUs"


# ---- a batch ---------------------------------------------------------------------------------------------


def noisy_line(rec: dict[str, Any]) -> str:
    """The one line saying a record's measurement ran on a busy machine."""
    reasons = rec.get("conditions", {}).get("reasons") or ["the machine was busy"]
    return (f"noisy: {'; '.join(reasons)}: the headroom describes a busy machine, not the program "
            "(violations are still judged on the minimum)")


def noisy_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r.get("noisy")]


def headroom_series(records: list[dict[str, Any]]) -> dict[tuple[str, str, str], list[tuple[str, float]]]:
    """(target, framework mode, SOL mode) → [(problem, median headroom)], over problems that have it and
    were measured on a quiet machine (a noisy record's headroom is the machine's, not the program's)."""
    out: dict[tuple[str, str, str], list[tuple[str, float]]] = {}
    for rec in records:
        if rec.get("noisy"):
            continue
        for target, per_fw in rec.get("headroom", {}).items():
            for fw, per_mode in per_fw.items():
                for mode, r in per_mode.items():
                    out.setdefault((target, fw, mode), []).append((rec["problem"], r["median"]))
    return out


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else math.nan


def coverage(records: list[dict[str, Any]]) -> dict[str, int]:
    return {
        "problems": len(records),
        "translated": sum(1 for r in records if r.get("translate", {}).get("ok")),
        "bounded": sum(1 for r in records if "bounds" in r),
        "measured": sum(1 for r in records if any(m.get("min_s") is not None
                                                   for m in r.get("measurements", {}).values())),
        "timeout": sum(1 for r in records if r.get("status") == "timeout"),
        "crashed": sum(1 for r in records if r.get("status") == "crashed"),
        "violations": sum(len(r.get("violations", [])) for r in records),
        "problems_with_violations": sum(1 for r in records if r.get("violations")),
        "cached_beats": sum(len(r.get("beats", [])) for r in records),
        "noisy": sum(1 for r in records if r.get("noisy")),
    }


def floors_line(records: list[dict[str, Any]]) -> str:
    """The precision floors the batch's bounds were priced under, when any was (`--precision-floor`): its
    headroom is then against a kernel allowed to compute at the floor, not the program as written."""
    floors = sorted({str(r["precision_floor"]) for r in records if r.get("precision_floor")})
    if not floors:
        return ""
    plain = sum(1 for r in records if "bounds" in r and not r.get("precision_floor"))
    return (f"precision floor {', '.join(floors)}: contractions priced at it where that is faster"
            + (f" ({plain} record(s) without a floor)" if plain else ""))


def render_summary(records: list[dict[str, Any]]) -> str:
    buf = StringIO()
    console = _console(buf)
    cov = coverage(records)
    n = cov["problems"] or 1
    console.print(f"coverage: {cov['problems']} problems; translated {cov['translated']} "
                  f"({cov['translated'] / n:.0%}), "
                  f"bounded {cov['bounded']} ({cov['bounded'] / n:.0%}), measured {cov['measured']} "
                  f"({cov['measured'] / n:.0%}); timed out {cov['timeout']}, crashed {cov['crashed']}",
                  markup=False, highlight=False)
    floor = floors_line(records)
    if floor:
        console.print(floor, markup=False, highlight=False)
    series = headroom_series(records)
    if series:
        table = Table(title="Headroom (measured median ÷ SOL)", title_justify="left")
        for col in ("target", "framework mode", "SOL mode", "problems", "median", "geomean", "min", "below 1"):
            table.add_column(col, justify="left" if col in ("target", "framework mode", "SOL mode") else "right")
        order = {m: i for i, m in enumerate(MODES)}
        fw_order = {m: i for i, m in enumerate(FRAMEWORK_MODES)}
        for (target, fw, mode), items in sorted(series.items(), key=lambda kv: (kv[0][0], fw_order.get(kv[0][1], 9),
                                                                                 order.get(kv[0][2], 9))):
            xs = [x for _, x in items]
            table.add_row(target, fw, LABELS.get(mode, mode), str(len(xs)), ratio(statistics.median(xs)),
                          ratio(geomean(xs)), ratio(min(xs)), str(sum(1 for x in xs if x < 1)))
        console.print(table)
    noisy = noisy_records(records)
    if noisy:
        console.print(f"noisy: {len(noisy)} measured on a busy machine, left out of the headroom: "
                      + ", ".join(r["problem"] for r in noisy[:10]) + (" ..." if len(noisy) > 10 else ""),
                      markup=False, highlight=False)
    console.print(f"violations: {cov['violations']} in {cov['problems_with_violations']} problem(s); "
                  f"unfused model beaten with cached intermediates: {cov['cached_beats']}", markup=False,
                  highlight=False)
    for rec in records:
        for beat in beats_of(rec):
            if beat.violation:
                console.print(f"  {rec['problem']}: {beat.line()}", markup=False, highlight=False)
    failed = [r for r in records if r.get("status") != "ok"]
    if failed:
        console.print(f"failed: {len(failed)}", markup=False, highlight=False)
        for r in failed[:50]:
            err = (r.get("errors") or [{"stage": r.get("status"), "message": ""}])[0]
            first = str(err.get("message", "")).strip().splitlines()
            line = f"  {r['problem']}: {r.get('status')} at {err.get('stage')}: {first[0] if first else ''}"
            console.print(line[:220], markup=False, highlight=False)
    return buf.getvalue()
