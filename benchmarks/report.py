"""The HTML report's cost: `solar-opt --lift-einsum --fuse --sol=h100 --report PAGE` against the same run
without `--report`, on a translated ResNet-101 and DenseNet-201 (benchmarks/network_corpus) and an example.

    python benchmarks/report.py
    python benchmarks/report.py --repeat 5 --networks resnet101 --examples mlp_heads

Both runs use this checkout (or `--tree`), alternated run by run in one process tree (so a load that comes and goes
weighs on both alike); CPU time is the child's user + system time, Graphviz's `dot` included, and is
printed as medians with the report's cost as a multiple of the run without it. Issue 42: the page is a
view of the results `--sol` already computes, so it should cost a small multiple of the run, not minutes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from opt_networks import PIPELINE, RUNNER, alternated, translate

ROOT = Path(__file__).resolve().parent.parent


def timed(tree: Path, sir: Path, extra: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one solar-opt run from `tree` (a failure stops the benchmark). The child's
    rusage from wait4 includes the processes it waited for: Graphviz's `dot` is counted."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, str(tree), "solar_opt", str(sir), *PIPELINE, *extra,
                             "-o", os.devnull], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"report: solar-opt on {sir.name} {' '.join(extra)} failed")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per side and input (alternated)")
    ap.add_argument("--networks", default="resnet101,densenet201")
    ap.add_argument("--examples", default="mlp_heads", help="examples/*.sir by name, comma-separated")
    ap.add_argument("--tree", type=Path, default=ROOT, help="the source tree to run (default: this checkout)")
    ap.add_argument("--sir-dir", type=Path, help="where the translated networks are kept (default: a temporary one)")
    args = ap.parse_args()
    sir_dir = args.sir_dir or Path(tempfile.mkdtemp(prefix="report_bench_"))
    sir_dir.mkdir(parents=True, exist_ok=True)
    page = sir_dir / "report.html"
    print(f"solar-opt {' '.join(PIPELINE)} from {args.tree}, with --report against without; "
          f"{args.repeat} runs each, alternated; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    inputs = [translate(n, sir_dir) for n in args.networks.split(",") if n]
    inputs += [args.tree / "examples" / f"{n}.sir" for n in args.examples.split(",") if n]
    for sir in inputs:
        wall, cpu = alternated({"plain": partial(timed, args.tree, sir, []),
                                "report": partial(timed, args.tree, sir, ["--report", str(page)])}, args.repeat)
        print(f"{sir.stem:16s} without {wall['plain']:6.2f} s wall {cpu['plain']:6.2f} s CPU | "
              f"--report {wall['report']:6.2f} s wall {cpu['report']:6.2f} s CPU | "
              f"CPU x{cpu['report'] / cpu['plain']:.2f}")


if __name__ == "__main__":
    main()
