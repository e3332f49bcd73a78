"""The SOL by source line: each unit of execution carries the user's `file:line` its frontend recorded
(`loc(...)`), and a line's figures are those of the units it made (docs/sol.md, "By source line").

- FLOPs and bytes of a line are the sums over its units (unfused: each kernel alone), so they are exact.
- Its unfused time is the sum of its units' SOL times.
- Its fused time is its part of the fusion groups' times: a group's time is split among the lines of its
  units in proportion to their unfused times (a group shares its time; the split is a convention, stated in
  the report, and the lines' fused times add up to the fused SOL).
- A unit made inside library code (torch.nn, transformers) is at the innermost frame in the user's file;
  the library frame the frontend saw inside it is kept beside it (`library_frame`), as profilers show it.
"""

from __future__ import annotations

import linecache
import os
from dataclasses import dataclass, field
from typing import Any

from solar.backends.cost import Timing, Work
from solar.backends.report import TargetReport, short_path, unit_location, unit_module
from solar.ir import attr_names

NO_LINE = "<no source line>"  # units whose ops carry no frontend location (hand-written SIR)
TOP = 20  # the terminal table's rows


@dataclass
class LineCost:
    """What one source line costs at the speed of light on one target."""

    file: str
    line: int
    code: str
    flops: int = 0
    bytes: int = 0  # the unfused bytes of its units (each kernel reads its inputs and writes its outputs)
    unfused_s: float = 0.0
    fused_s: float = 0.0
    units: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    library_frames: list[str] = field(default_factory=list)  # e.g. torch/nn/modules/linear.py:125

    @property
    def where(self) -> str:
        return NO_LINE if not self.file else f"{self.file}:{self.line}"


@dataclass
class SourceLines:
    """The lines of one target's report, costliest (fused) first, with the totals the shares divide."""

    target: str
    lines: list[LineCost]
    unfused_s: float
    fused_s: float

    def unfused_share(self, line: LineCost) -> float:
        return line.unfused_s / self.unfused_s if self.unfused_s > 0 else 0.0

    def fused_share(self, line: LineCost) -> float:
        return line.fused_s / self.fused_s if self.fused_s > 0 else 0.0

    @property
    def located(self) -> bool:
        """Whether any unit has a source line (hand-written SIR has none: then no table is printed)."""
        return any(line.file for line in self.lines)

    def to_json(self) -> list[dict[str, Any]]:
        return [{"file": ln.file or None, "line": ln.line or None, "code": ln.code, "flops": ln.flops,
                 "bytes": ln.bytes, "unfused_s": ln.unfused_s, "fused_s": ln.fused_s,
                 "unfused_share": self.unfused_share(ln), "fused_share": self.fused_share(ln),
                 "units": ln.units, "groups": ln.groups, "library_frames": ln.library_frames}
                for ln in self.lines]


def library_frame(work: Work) -> str | None:
    return next((str(op.attrs[attr_names.LIBRARY_FRAME]) for op in work.ops
                 if attr_names.LIBRARY_FRAME in op.attrs), None)


def line_text(file: str, line: int, base_dir: str | None = None) -> str:
    """The text of a source line; a relative path is looked up beside the SIR file too."""
    text = linecache.getline(file, line)
    if not text and base_dir and not os.path.isabs(file):
        text = linecache.getline(os.path.join(base_dir, file), line)
    return text.strip()


def _members(group: Work) -> set[int]:
    return {id(o) for top in group.ops for o in top.walk()}


def by_source_line(report: TargetReport, base_dir: str | None = None) -> SourceLines:
    """Every source line of `report`'s units, costliest first by fused time (then unfused, then place)."""
    lines: dict[tuple[str, int], LineCost] = {}
    key_of: list[tuple[str, int]] = []
    for work, timing in report.units:
        loc = unit_location(work)
        key = (loc.file, loc.line) if loc is not None else ("", 0)
        cost = lines.get(key)
        if cost is None:
            cost = lines[key] = LineCost(key[0], key[1], line_text(*key, base_dir) if key[0] else "")
        cost.flops += work.flops
        cost.bytes += work.total_bytes
        cost.unfused_s += timing.seconds
        cost.units.append(work.name)
        frame = library_frame(work)
        if frame is not None and frame not in cost.library_frames:
            cost.library_frames.append(frame)
        key_of.append(key)
    grouped: set[int] = set()
    for group, group_timing in report.groups:
        members = _members(group)
        inside = [k for k, (w, _) in enumerate(report.units) if w.ops and id(w.ops[0]) in members]
        grouped.update(inside)
        _share(lines, [(key_of[k], report.units[k][1]) for k in inside], group_timing, group.name)
    for k, (_, timing) in enumerate(report.units):
        if k not in grouped:  # a unit outside every group is its own group
            lines[key_of[k]].fused_s += timing.seconds
    ordered = sorted(lines.values(), key=lambda c: (-c.fused_s, -c.unfused_s, c.file, c.line))
    return SourceLines(report.name, ordered, report.modes["unfused"].seconds, report.modes["fused"].seconds)


def _share(lines: dict[tuple[str, int], LineCost], parts: list[tuple[tuple[str, int], Timing]],
           group_timing: Timing, group_name: str) -> None:
    """Splits a group's time among its units' lines in proportion to their unfused times (equally when
    they have none)."""
    if not parts:
        return
    weights: dict[tuple[str, int], float] = {}
    for key, timing in parts:
        weights[key] = weights.get(key, 0.0) + timing.seconds
    total = sum(weights.values())
    for key, weight in weights.items():
        share = weight / total if total > 0 else 1.0 / len(weights)
        lines[key].fused_s += group_timing.seconds * share
        if group_name not in lines[key].groups:
            lines[key].groups.append(group_name)


def group_lines(report: TargetReport) -> dict[str, list[str]]:
    """Each fusion group's source lines (`file:line`), in program order: a group may span several."""
    out: dict[str, list[str]] = {}
    for group, _ in report.groups:
        members = _members(group)
        seen: list[str] = []
        for work, _ in report.units:
            loc = unit_location(work)
            if work.ops and id(work.ops[0]) in members and loc is not None:
                where = f"{loc.file}:{loc.line}"
                if where not in seen:
                    seen.append(where)
        out[group.name] = seen
    return out


def render_source_lines(tables: list[SourceLines], top: int = TOP) -> str:
    """The terminal table: the `top` costliest lines of the first target, with every target's shares."""
    from io import StringIO

    from rich.console import Console
    from rich.table import Table

    from solar.backends.report import quantity, seconds
    from solar.ir.plain_tables import print_table

    first = tables[0]
    table = Table(title=f"By source line (top {min(top, len(first.lines))} of {len(first.lines)}, by fused SOL "
                        f"on {first.target})", title_justify="left")
    for col in ("line", "FLOPs", "bytes"):
        table.add_column(col, justify="left" if col == "line" else "right")
    for t in tables:
        table.add_column(f"{t.target} unfused", justify="right")
        table.add_column("share", justify="right")
        table.add_column("fused", justify="right")
        table.add_column("share", justify="right")
    table.add_column("source")
    by_key = [{(ln.file, ln.line): ln for ln in t.lines} for t in tables]
    for ln in first.lines[:top]:
        row = [_short(ln.where), quantity(ln.flops), quantity(ln.bytes)]
        for t, lines in zip(tables, by_key, strict=True):
            other = lines[(ln.file, ln.line)]
            row += [seconds(other.unfused_s), f"{100 * t.unfused_share(other):.1f}%", seconds(other.fused_s),
                    f"{100 * t.fused_share(other):.1f}%"]
        code = ln.code + (f"  ← {', '.join(ln.library_frames)}" if ln.library_frames else "")
        table.add_row(*row, code)
    buf = StringIO()
    print_table(Console(file=buf, width=1000, color_system=None), table)
    buf.write("fused time of a line: its part of each fusion group's time, split in proportion to the unfused "
              "times of the group's lines (← the library frame inside the line).\n")
    spans: dict[str, list[str]] = {}
    for ln in sorted(first.lines, key=lambda c: (c.file, c.line)):
        for group in ln.groups:
            spans.setdefault(group, []).append(_short(ln.where))
    for group, where in spans.items():
        if len(where) > 1:
            buf.write(f"{group} spans {len(where)} lines: {', '.join(where)}\n")
    return buf.getvalue()


def _short(where: str) -> str:
    """A place as the table prints it: its path relative to the working directory when inside it."""
    if where == NO_LINE:
        return where
    file, _, line = where.rpartition(":")
    return f"{short_path(file)}:{line}"


def add_to_json(doc: dict[str, Any], reports: list[TargetReport], base_dir: str | None = None,
                lines: list[SourceLines] | None = None) -> dict[str, Any]:
    """The `--sol-report` document with each target's lines (`source_lines`; `lines` when computed already),
    each unit's location and each group's lines (added in version 1; docs/sol.md)."""
    for k, (entry, r) in enumerate(zip(doc["targets"], reports, strict=True)):
        entry["source_lines"] = (lines[k] if lines is not None else by_source_line(r, base_dir)).to_json()
        for unit, (w, _) in zip(entry["units"], r.units, strict=True):
            loc = unit_location(w)
            unit["loc"] = None if loc is None else {"file": loc.file, "line": loc.line, "col": loc.col}
            unit["library_frame"] = library_frame(w)
            unit["module"] = unit_module(w)
        spans = group_lines(r)
        for group in entry["groups"]:
            group["lines"] = spans.get(group["name"], [])
    return doc
