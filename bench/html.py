"""`solar-bench --report=report.html`: the HTML report of one problem (backends/html_report.py) with what was
measured: headroom and violations from the record, and, for PyTorch on the CPU, each source line's measured
share (bench/line_profile.py)."""

from __future__ import annotations

import os
from typing import Any

from solar.backends.cost import CostModel, Peaks
from solar.backends.html_report import dot_of, report_inputs, sir_of_units, write_html
from solar.backends.report import TargetReport, analyse, to_json
from solar.backends.source_lines import add_to_json
from solar.bench.bounds import prepare
from solar.bench.line_profile import add_measured, profile_lines
from solar.bench.problem import Program
from solar.targets.loader import load_target

PROFILED_RUNS = 3


def sol_document(module: Any, sizes: dict[str, int], targets: list[str], allow_tf32: bool
                 ) -> tuple[dict[str, Any], list[TargetReport], Any]:
    """The `--sol-report` document of `module` at `sizes` (prepared as the bounds are), its reports and the
    prepared module."""
    work = prepare(module, sizes)
    policy = "tf32" if allow_tf32 else "framework"
    model = CostModel(work, policy)
    reports = [analyse(model, Peaks(load_target(t)), None) for t in targets]
    name = work.name or model.func.name
    return add_to_json(to_json(reports, name, model.values, policy), reports), reports, work


def write_bench_report(path: str, problem: str, prog: Program, rec: dict[str, Any], targets: list[str],
                       command: str) -> None:
    """Writes the page; the line profile runs when the record measured PyTorch eager on the CPU."""
    names = list(dict.fromkeys([*targets, *rec.get("bounds", {})]))  # with the GPU's own target, if detected
    doc, reports, work = sol_document(prog.module, prog.sizes, names, bool(rec.get("allow_tf32")))
    eager = rec.get("measurements", {}).get("eager", {})
    if prog.framework == "torch" and eager.get("device") == "cpu" and eager.get("min_s") is not None:
        model, inputs = prog.make_run()
        profile = profile_lines(lambda: model(*inputs), PROFILED_RUNS)
        machine = next(iter(rec.get("headroom", {})), None)
        add_measured(doc, profile, machine)
        rec["source_lines"] = next((t["source_lines"] for t in doc["targets"] if t["name"] == machine), [])
        rec.setdefault("notes", []).append(f"source lines: measured share from {PROFILED_RUNS} profiled eager runs "
                                           "(torch.profiler, CPU)")
    inputs_ = report_inputs(os.path.abspath(problem), prog.sizes, names, command)
    write_html(doc, path, sir_of_units(reports[0]), dot_of(work), inputs_, rec)


def render_measured_lines(rec: dict[str, Any], top: int = 20) -> str:
    """The terminal table of the measured lines: share of the profiled eager time, SOL and headroom."""
    from io import StringIO

    from rich.console import Console
    from rich.table import Table

    from solar.backends.report import seconds

    lines = sorted((ln for ln in rec.get("source_lines", []) if ln.get("measured_s") is not None),
                   key=lambda ln: -ln["measured_s"])
    if not lines:
        return ""
    table = Table(title=f"By source line, measured (eager, torch.profiler; top {min(top, len(lines))})",
                  title_justify="left")
    for col in ("line", "measured", "share", "SOL (unfused)", "headroom", "source"):
        table.add_column(col, justify="left" if col in ("line", "source") else "right")
    for ln in lines[:top]:
        table.add_row(f"{ln['file']}:{ln['line']}", seconds(ln["measured_s"]), f"{100 * ln['measured_share']:.1f}%",
                      seconds(ln["unfused_s"]), "" if ln.get("headroom") is None else f"{ln['headroom']:.3g}×",
                      ln["code"])
    buf = StringIO()
    Console(file=buf, width=1000, color_system=None).print(table)
    return buf.getvalue()
