"""End to end: source -> SOL report per program of benchmarks/gpu_corpus, with the time of every stage.

Each program runs in a fresh process, as `solar-translate FILE -o m.sir && solar-opt m.sir --lift-einsum
--fuse --sol=h100,b200,mi300x,a100` would, but in one interpreter so that the stages are timed apart:

- start-up: importing torch and SOLAR's frontend (the floor every torch translation pays);
- translate: torch.export (every input dim dynamic) and lowering to SIR;
- validate: the original and the IR at reduced sizes, compared;
- lift: --lift-einsum; fuse: --fuse; sol: --sol on four targets (H100, B200, MI300X, A100).

The total of a program is the wall time of its process (its CPU time, user + system, beside it: on a shared
machine the steadier figure). The median over the programs is the figure (target
8 s, issue 13); the median of each stage is printed beside it, and the start-up is the named baseline.

    python benchmarks/pipeline.py [--pattern P]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "gpu_corpus")
TARGETS = "h100,b200,mi300x,a100"
STAGES = ("start-up", "translate", "validate", "lift", "fuse", "sol")

_CHILD = """
import json, sys, time
t0 = time.perf_counter()
import torch
from solar.frontends import torch_export as te
from solar.frontends.scaled_reference import validate_torch
from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.pass_manager import PassContext, PassManager
from solar.passes import registry
times = {{"start-up": time.perf_counter() - t0}}

def stage(name, fn):
    start = time.perf_counter()
    out = fn()
    times[name] = time.perf_counter() - start
    return out

problem = te.load_problem({path!r})
tr = stage("translate", lambda: te.translate_problem(problem, "all"))
report = stage("validate", lambda: validate_torch(problem, tr))  # as solar-translate validates
module = tr.module
ctx = PassContext(DiagnosticEngine(), report=lambda _: None)
for name, pipeline in (("lift", "lift-einsum"), ("fuse", "fuse"), ("sol", "sol{{target={targets}}}")):
    module = stage(name, lambda: PassManager(registry.parse_pipeline(pipeline)).run(module, ctx))
sol = ctx.results["sol"]
print(json.dumps({{"times": times, "ok": report.ok, "targets": len(sol)}}))
"""


def run_program(path: str) -> tuple[float, float, dict[str, float], str]:
    """(wall s, CPU s (user + system, from the kernel), stage times, note) of one program's process."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", _CHILD.format(path=path, targets=TARGETS)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime - _CHILDREN_CPU[0]
    _CHILDREN_CPU[0] += cpu
    if proc.returncode != 0:
        return wall, cpu, {}, (err.strip().splitlines() or ["failed"])[-1][:100]
    result = json.loads(out.strip().splitlines()[-1])
    note = "" if result["ok"] else "validation FAILED"
    if result["targets"] != len(TARGETS.split(",")):
        note += f" ({result['targets']} targets reported)"
    return wall, cpu, result["times"], note


_CHILDREN_CPU = [0.0]  # CPU seconds of the children reaped so far


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pattern", default="", help="only programs whose file name contains this")
    args = ap.parse_args(argv)
    programs = sorted(f for f in os.listdir(CORPUS) if f.endswith(".py") and args.pattern in f)
    print(f"{'program':24s} {'total':>7s} {'cpu':>7s} " + " ".join(f"{s:>9s}" for s in STAGES))
    totals: list[float] = []
    cpus: list[float] = []
    per_stage: dict[str, list[float]] = {s: [] for s in STAGES}
    for f in programs:
        wall, cpu, times, note = run_program(os.path.join(CORPUS, f))
        if not times:
            print(f"{f[:-3]:24s} failed: {note}")
            continue
        totals.append(wall)
        cpus.append(cpu)
        for s in STAGES:
            per_stage[s].append(times.get(s, 0.0))
        cells = " ".join(f"{times.get(s, 0.0):8.2f}s" for s in STAGES)
        print(f"{f[:-3]:24s} {wall:6.2f}s {cpu:6.2f}s {cells}  {note}".rstrip(), flush=True)
    if not totals:
        return 1
    split = ", ".join(f"{s} {statistics.median(per_stage[s]):.2f}s" for s in STAGES)
    print(f"source -> SOL report on {len(TARGETS.split(','))} targets: median {statistics.median(totals):.2f}s "
          f"(target <= 8), worst {max(totals):.2f}s over {len(totals)} programs")
    print(f"median per stage: {split}; baseline (start-up: import torch + frontend) "
          f"{statistics.median(per_stage['start-up']):.2f}s")
    print(f"CPU time (user + system) per program: median {statistics.median(cpus):.2f}s, worst {max(cpus):.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
