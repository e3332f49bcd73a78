"""Sweep memory: the peak resident memory of a million-point sweep written to a report.

`examples/params.sir` (a SwiGLU layer) swept over S = 1..1000 × D = 1..1000 on the H100, with a latency (so each
record has the inverse roofline too), `--sweep-report` and the HTML report: 3,000,000 records, about 1.2 GB of
JSON. The report is written a chunk of records at a time (backends/sweep_report.py) and the grid's evaluation
drops each formula node's values once used (solar_ir/analysis/formula.py), so the peak is that of the grid's
arrays, not of the records. Goal: at most 1 GB (docs/sweeps.md gives the figure measured). The baseline, run
first in the same process: the same sweep with a hundredth of the points; a streamed report keeps the ratio
of the two peaks far below the ratio of the points (100), which a report held in memory would approach.

    python benchmarks/sweep_memory.py [--side 1000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--side", type=int, default=1000, help="values of S and of D (default 1000: 10^6 points)")
    args = ap.parse_args()
    tool = Path(sys.executable).with_name("solar-opt")
    base = _run(tool, max(1, args.side // 10))
    peak = _run(tool, args.side)
    print(f"{args.side ** 2:,} points / {max(1, args.side // 10) ** 2:,} points (the baseline): peak memory "
          f"{peak / base:.2f}x for 100x the points")
    if peak > 1024:
        sys.exit(f"over the goal of 1 GB: {peak:,.0f} MB")


def _run(tool: Path, side: int) -> float:
    """One sweep of side x side points in a child process: prints its line, returns its peak memory in MB."""
    with tempfile.TemporaryDirectory() as tmp:
        report, page = os.path.join(tmp, "sweep.json"), os.path.join(tmp, "sweep.html")
        command = [str(tool), str(ROOT / "examples" / "params.sir"), "--lift-einsum", "--fuse", "--sol=h100",
                   "--sweep", f"S=1..{side}", "--sweep", f"D=1..{side}", "--target-latency=50us",
                   "--sweep-report", report, "--report", page, "-o", os.devnull]
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)  # this child's own peak, not the largest child's so far
        if status != 0:
            sys.exit(f"solar-opt failed on the {side} x {side} sweep")
        elapsed = time.perf_counter() - start
        peak_mb = usage.ru_maxrss / 1024  # kB on Linux
        with open(report, "rb") as f:
            lines = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 24), b""))
        print(f"{side ** 2:,} points: {os.path.getsize(report) / 1e9:.2f} GB report ({lines:,} lines), "
              f"{os.path.getsize(page) / 1e3:.0f} kB page, peak memory {peak_mb:,.0f} MB, {elapsed:.0f} s")
    return peak_mb

if __name__ == "__main__":
    main()
