"""`solar-bench --report=report.html`: the HTML report of one problem (backends/html_report.py) with what was
measured: headroom and violations from the record, and, for PyTorch on the CPU, each source line's measured
share (bench/line_profile.py)."""

from __future__ import annotations

import os
from typing import Any

from solar.backends.cost import CostModel, Peaks
from solar.backends.html_report import report_inputs
from solar.backends.report import analyse
from solar.backends.sol_results import SolResults
from solar.bench.bounds import prepare
from solar.bench.line_profile import add_measured, profile_lines
from solar.bench.problem import Program
from solar.ir.outputs import write_text_atomic
from solar.targets.loader import load_target

PROFILED_RUNS = 3


def sol_results(module: Any, sizes: dict[str, int], targets: list[str], allow_tf32: bool,
                precision_floor: str | None = None) -> SolResults:
    """The results model of `module` at `sizes`, prepared and priced as the bounds are."""
    work = prepare(module, sizes)
    policy = "tf32" if allow_tf32 else "framework"
    model = CostModel(work, policy)
    reports = [analyse(model, Peaks(load_target(t), precision_floor), None) for t in targets]
    return SolResults.build(model, reports, work.name or model.func.name, policy, precision_floor=precision_floor)


def write_bench_report(path: str, problem: str, prog: Program, rec: dict[str, Any], targets: list[str],
                       command: str) -> None:
    """Writes the page; the line profile runs when the record measured PyTorch eager on the CPU."""
    names = list(dict.fromkeys([*targets, *rec.get("bounds", {})]))  # with the GPU's own target, if detected
    results = sol_results(prog.module, prog.sizes, names, bool(rec.get("allow_tf32")), rec.get("precision_floor"))
    doc = results.document
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
    write_text_atomic(path, results.html(inputs_, rec), "the HTML report")


def render_measured_lines(rec: dict[str, Any], top: int = 20) -> str:
    """The terminal table of the measured lines: share of the profiled eager time, SOL and headroom."""
    from io import StringIO

    from rich.console import Console
    from rich.table import Table

    from solar.backends.report import ratio, seconds

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
                      seconds(ln["unfused_s"]), "" if ln.get("headroom") is None else ratio(ln['headroom']),
                      ln["code"])
    buf = StringIO()
    Console(file=buf, width=1000, color_system=None).print(table)
    return buf.getvalue()
