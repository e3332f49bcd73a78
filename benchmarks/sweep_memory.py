"""Sweep memory: the peak resident memory of a million-point sweep written to a report.

`examples/params.sir` (a SwiGLU layer) swept over S = 1..1000 × D = 1..1000 on the H100, with a latency (so each
record has the inverse roofline too), `--sweep-report` and the HTML report: 3,000,000 records, about 1.2 GB of
JSON. The report is written a chunk of records at a time (backends/sweep_report.py) and the grid's evaluation
drops each formula node's values once used (solar_ir/analysis/formula.py), so the peak is that of the grid's
arrays, not of the records. Goal: at most 1 GB (docs/sweeps.md gives the figure measured).

    python benchmarks/sweep_memory.py [--side 1000]
"""

from __future__ import annotations

import argparse
import os
import resource
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
    with tempfile.TemporaryDirectory() as tmp:
        report, page = os.path.join(tmp, "sweep.json"), os.path.join(tmp, "sweep.html")
        command = [str(tool), str(ROOT / "examples" / "params.sir"), "--lift-einsum", "--fuse", "--sol=h100",
                   "--sweep", f"S=1..{args.side}", "--sweep", f"D=1..{args.side}", "--target-latency=50us",
                   "--sweep-report", report, "--report", page, "-o", os.devnull]
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        elapsed = time.perf_counter() - start
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # kB on Linux
        with open(report, "rb") as f:
            lines = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 24), b""))
        print(f"{args.side ** 2:,} points: {os.path.getsize(report) / 1e9:.2f} GB report ({lines:,} lines), "
              f"{os.path.getsize(page) / 1e3:.0f} kB page, peak memory {peak_mb:,.0f} MB, {elapsed:.0f} s")
        if peak_mb > 1024:
            sys.exit(f"over the goal of 1 GB: {peak_mb:,.0f} MB")


if __name__ == "__main__":
    main()
