"""Times measured elsewhere, joined to the bound at the same sizes (`solar-bench --measured FILE`).

A lower bound must hold for every run of the program on the target, including runs timed on another machine
and published. Three formats are read:

* KernelBench's timing JSON (`{"level1": {"94_MSELoss.py": {"min": 4.34, "hardware": ...}}}`, milliseconds):
  the framework mode is the file's (`compile` in its name: torch.compile, else eager), the target the
  entries' `hardware`;
* a CSV with the columns `problem,target,framework,min_s`;
* a PyTorch profiler trace (Chrome JSON, `prof.export_chrome_trace`), joined kernel by kernel to SOLAR's
  units (bench/trace_join.py).

**Which bound is compared.** A timing harness that does not flush the L2 between trials (KernelBench's
does not) lets a trial start with the previous trial's data on chip: its inputs can be read from the L2 and
its outputs left there, dirty, when the trial ends. The DRAM roofline of the fused, cache-aware and whole-graph
modes assumes neither. With `--measured-l2 warm` (the default, since a bound that holds warm holds flushed too)
each of those modes is judged by

    max(the mode's compute time, the whole graph's roofline with 2 × L2 bytes taken off its traffic)

— the L2 can hold at most its capacity of the inputs at the start of a trial and at most its capacity of the
outputs at its end, so at least (whole-graph bytes − 2 × L2) cross the DRAM bus. For traffic far above the
L2 (most KernelBench problems move gigabytes) this is the cold bound; for a problem that fits in the L2 only
its compute is a bound. `--measured-l2 flushed` judges the modes as a `solar-bench` measurement does.
Headroom is always against the plain (cold) bounds, as the paper reports it.
"""

from __future__ import annotations

import csv
import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

from solar.backends.report import ratio, seconds

from .bounds import LOWER_BOUND_MODES, MODE_LABELS, Bounds, TargetBounds
from .measure import detect_gpu_target

NEAR_MISS = 1.1  # a measured time within 10% of its bound is printed as a near-miss
L2_STATES = ("warm", "flushed")
CSV_COLUMNS = ("problem", "target", "framework", "min_s")


class MeasuredError(ValueError):
    """A measured-times file that cannot be read (the message names the file and what is wrong)."""


@dataclass(frozen=True)
class MeasuredTime:
    """One measured time: the fastest run of a problem in a framework mode on a target."""

    problem: str  # the problem's key: a relative path such as level1/94_MSELoss.py, or a file name
    target: str
    framework: str
    min_s: float
    origin: str  # the file it was read from


def read_measured(path: str) -> list[MeasuredTime]:
    """The times of a KernelBench timing JSON or a CSV (a profiler trace is read by trace_join)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as err:
        raise MeasuredError(f"--measured {path}: {err.strerror or err}") from None
    if path.lower().endswith(".csv"):
        return _read_csv(path, text)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise MeasuredError(f"--measured {path}: not JSON ({err.msg} at line {err.lineno}) and not a .csv") from None
    if isinstance(doc, dict) and "traceEvents" in doc:
        raise MeasuredError(f"--measured {path}: a profiler trace joins to one problem: give a problem file, "
                            "not a directory")
    return _read_kernelbench(path, doc)


def is_trace(path: str) -> bool:
    """Whether `path` is a Chrome trace (a JSON object with `traceEvents`), read without parsing it all."""
    if path.lower().endswith(".csv"):
        return False
    try:
        with open(path, encoding="utf-8") as f:
            head = f.read(1 << 20)
    except OSError:
        return False
    return head.lstrip().startswith("{") and '"traceEvents"' in head


def framework_of(path: str) -> str:
    """KernelBench names its torch.compile timings `..._compile_...`; everything else is eager."""
    return "compile" if "compile" in os.path.basename(path).lower() else "eager"


def _read_kernelbench(path: str, doc: Any) -> list[MeasuredTime]:
    if not isinstance(doc, dict) or not doc:
        raise MeasuredError(f"--measured {path}: expected KernelBench's timing JSON "
                            '({"level1": {"NAME.py": {"min": MS, "hardware": ...}}})')
    framework = framework_of(path)
    out = []
    for level, problems in doc.items():
        if not isinstance(problems, dict):
            raise MeasuredError(f"--measured {path}: '{level}' holds no problems (expected an object of problems)")
        for name, entry in problems.items():
            if not isinstance(entry, dict) or not isinstance(entry.get("min"), int | float):
                raise MeasuredError(f"--measured {path}: {level}/{name} has no 'min' time in milliseconds")
            hardware = str(entry.get("hardware") or "")
            target = detect_gpu_target(hardware)
            if target is None:
                raise MeasuredError(f"--measured {path}: {level}/{name}: no target for hardware '{hardware}'")
            out.append(MeasuredTime(f"{level}/{name}", target, framework, float(entry["min"]) / 1e3, path))
    return out


def _read_csv(path: str, text: str) -> list[MeasuredTime]:
    rows = list(csv.reader(text.splitlines()))
    if not rows or tuple(c.strip() for c in rows[0]) != CSV_COLUMNS:
        raise MeasuredError(f"--measured {path}: the first line must be the header {','.join(CSV_COLUMNS)}")
    out = []
    for n, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        if len(row) != len(CSV_COLUMNS):
            raise MeasuredError(f"--measured {path}:{n}: {len(row)} columns, expected {len(CSV_COLUMNS)}")
        problem, target, framework, value = (c.strip() for c in row)
        try:
            min_s = float(value)
        except ValueError:
            raise MeasuredError(f"--measured {path}:{n}: min_s '{value}' is not a number of seconds") from None
        if not math.isfinite(min_s) or min_s <= 0:
            raise MeasuredError(f"--measured {path}:{n}: min_s must be a positive number of seconds")
        out.append(MeasuredTime(problem, target, framework, min_s, path))
    return out


def match(times: list[MeasuredTime], problem: str, root: str | None) -> list[MeasuredTime]:
    """The times of `problem` (a path): by its path relative to `root` (a batch's directory), else by its file
    name, else by its parent folder and file name (level1/94_MSELoss.py)."""
    norm = os.path.normpath(problem)
    keys = {os.path.basename(norm), os.path.join(os.path.basename(os.path.dirname(norm)), os.path.basename(norm))}
    if root:
        keys.add(os.path.relpath(norm, root))
    return [t for t in times if os.path.normpath(t.problem) in keys]


# ---- judging ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """A measured time against one lower-bound mode: the bound judged (warm or flushed L2) and the plain one."""

    mode: str
    bound_s: float  # what the time is judged by
    plain_s: float  # the mode's bound as solar-bench reports it (DRAM traffic from a cold L2)

    def ratio(self, measured_s: float) -> float:
        return measured_s / self.bound_s if self.bound_s > 0 else math.inf


def judged_bounds(tb: TargetBounds, l2: str) -> list[Comparison]:
    """The lower-bound modes of one target as a measurement with the L2 `warm` or `flushed` is judged."""
    report = tb.report
    out = []
    for mode in LOWER_BOUND_MODES:
        plain = tb.seconds.get(mode)
        if plain is None:
            continue
        bound = plain
        if l2 == "warm":
            if report is None:
                raise ValueError("judged_bounds needs the target's report (compute_bounds keeps it)")
            bound = min(plain, warm_bound(tb, mode))
        out.append(Comparison(mode, bound, plain))
    return out


def warm_bound(tb: TargetBounds, mode: str) -> float:
    """A mode's bound for a trial that may start with the L2 full of its data (see the module's docstring)."""
    report = tb.report
    assert report is not None
    whole = report.modes["whole_graph"]
    credit = 2 * (tb.llc_bytes or 0)
    beta = report.peaks.bandwidth
    whole_warm = max(whole.compute_s, max(0, whole.bytes - credit) / beta)
    if mode == "whole_graph":
        return whole_warm
    result = report.cache_aware.mode if mode == "cache_aware" and report.cache_aware else report.modes.get(mode)
    compute = result.compute_s if result is not None else 0.0
    return max(compute, whole_warm)


@dataclass
class Verdict:
    """One measured time judged: each lower-bound mode's ratio, the tightest, and the headroom."""

    time: MeasuredTime
    problem: str  # the problem file
    comparisons: list[Comparison]
    l2: str
    flops: int = 0  # the problem's FLOPs and its fused DRAM bytes on the target: where it sits on the roofline
    fused_bytes: int = 0

    @property
    def tightest(self) -> Comparison:
        return max(self.comparisons, key=lambda c: c.bound_s)

    @property
    def ratio(self) -> float:
        return self.tightest.ratio(self.time.min_s)

    @property
    def violation(self) -> bool:
        return self.ratio < 1.0

    @property
    def near_miss(self) -> bool:
        return not self.violation and self.ratio < NEAR_MISS

    def headroom(self, mode: str = "fused") -> float | None:
        c = next((c for c in self.comparisons if c.mode == mode), None)
        return self.time.min_s / c.plain_s if c is not None and c.plain_s > 0 else None

    def line(self) -> str:
        c = self.tightest
        head = "VIOLATION" if self.violation else "near-miss" if self.near_miss else "ok"
        plain = "" if c.bound_s == c.plain_s else f"; {seconds(c.plain_s)} from a cold L2"
        return (f"{head}: {self.time.problem} {self.time.framework} on {self.time.target}: measured "
                f"{seconds(self.time.min_s)}, {MODE_LABELS[c.mode]} bound {seconds(c.bound_s)} ({self.l2} L2{plain}), "
                f"ratio {self.ratio:.3f}")

    def to_json(self) -> dict[str, Any]:
        return {"problem": self.problem, "key": self.time.problem, "target": self.time.target,
                "framework": self.time.framework, "measured_s": self.time.min_s, "origin": self.time.origin,
                "l2": self.l2, "mode": self.tightest.mode, "bound_s": self.tightest.bound_s, "ratio": self.ratio,
                "violation": self.violation, "near_miss": self.near_miss,
                "bounds": {c.mode: {"judged_s": c.bound_s, "plain_s": c.plain_s} for c in self.comparisons},
                "headroom_fused": self.headroom("fused")}


def judge_times(bounds: Bounds, problem: str, times: list[MeasuredTime], l2: str) -> list[Verdict]:
    """Every time of `problem` against the bounds of its target (which `bounds` must hold)."""
    out = []
    for t in times:
        tb = bounds.targets[t.target]
        fused = tb.report.modes.get("fused") if tb.report is not None else None
        out.append(Verdict(t, problem, judged_bounds(tb, l2), l2, bounds.flops, fused.bytes if fused else 0))
    return out


@dataclass
class MeasuredRun:
    """What `--measured` found over the problems given."""

    verdicts: list[Verdict] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)  # problems with no measured time
    failed: list[tuple[str, str]] = field(default_factory=list)  # (problem, why its bound failed)
    units: list[dict[str, Any]] = field(default_factory=list)  # a trace's per-unit join (trace_join)
    precision_floor: str | None = None  # --precision-floor: the bounds priced at it where that is faster
    # Per target: the DRAM bandwidth and each (precision, unit) peak the bounds used (the roofline's roofs).
    roofs: dict[str, tuple[float, dict[tuple[str, str], float]]] = field(default_factory=dict)

    @property
    def violations(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.violation]

    @property
    def any_violation(self) -> bool:
        """A time or a traced unit below its bound: solar-bench exits 3."""
        return bool(self.violations) or any(row["violation"] for row in self.units)

    def render(self) -> str:
        lines = [v.line() for v in sorted(self.verdicts, key=lambda v: v.ratio) if v.violation or v.near_miss]
        for row in self.units:
            lines.append(unit_line(row))
        ok = sum(1 for v in self.verdicts if not v.violation and not v.near_miss)
        lines.append(f"measured: {len(self.verdicts)} times joined to their bounds: {len(self.violations)} "
                     f"violation(s), {sum(v.near_miss for v in self.verdicts)} near-miss(es) (ratio < {NEAR_MISS}), "
                     f"{ok} clear")
        if self.unmatched:
            lines.append(f"measured: no time for {len(self.unmatched)} problem(s): " + ", ".join(self.unmatched[:8])
                         + (" …" if len(self.unmatched) > 8 else ""))
        lines += [f"measured: {p}: no bound ({why})" for p, why in self.failed]
        if self.precision_floor:
            lines.append(f"measured: bounds under precision floor {self.precision_floor} (float contractions priced "
                         f"at {self.precision_floor} where that is faster)")
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict[str, Any]:
        return {"precision_floor": self.precision_floor,
                "verdicts": [v.to_json() for v in self.verdicts], "unmatched": self.unmatched,
                "failed": [{"problem": p, "error": why} for p, why in self.failed], "units": self.units}


def unit_line(row: dict[str, Any]) -> str:
    head = "VIOLATION" if row["violation"] else "unit"
    if row.get("ratio") is None:
        return f"{head}: kernels of no unit: {seconds(row['measured_s'])} over {row['kernels']} kernel(s)"
    headroom = (f", headroom {ratio(row['headroom'])} over its SOL {seconds(row['sol_s'])}" if row.get("headroom")
                else "")
    return (f"{head}: {row['unit']} ({row['where']}): measured {seconds(row['measured_s'])} over {row['kernels']} "
            f"kernel(s), bound {seconds(row['bound_s'])} (warm L2), ratio {row['ratio']:.3f}{headroom}")
