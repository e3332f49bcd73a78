"""The GPU check: `solar-bench` with `--device cuda` on benchmarks/gpu_corpus, violations and headroom per mode.

Every program of the GPU corpus (matmuls, convolutions and transposed convolutions, norms over 10^8
elements, a bottleneck, a transformer block, a wide MLP) is translated, bounded on the GPU's own target
(detected from the device name) and measured eagerly and under torch.compile, with CUDA events and an L2
flush before each run. Printed: one line per problem (its least headroom per framework mode against the
fused and cache-aware SOL, and any violation: a run faster than a bound), then solar-bench's summary
(headroom per target, framework mode and SOL mode; violations). A violation is a bug in the model or the
counts; the exit status is then 3.

    python benchmarks/gpu_check.py                       # on a machine with one CUDA GPU (H100-class)
    python benchmarks/gpu_check.py --match 'conv*' --frameworks eager
    python benchmarks/gpu_check.py --records gpu_check.jsonl   # the report of an earlier run only

The run is meant to finish in under 8 minutes on one H100-class GPU: each timed mode stops after `--budget`
seconds of runs, each problem after `--timeout`, and the whole check at `--deadline` (the problems done by
then are reported; a later `--resume` run continues). `--in-process` measures the problems in this process
one by one instead of through `solar-bench`'s worker processes (for a stand-in device in tests).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "gpu_corpus")
DEADLINE_S = 8 * 60
MODES = ("fused", "cache_aware")  # the SOL modes a real run must never beat, printed per problem


def bench_argv(args: argparse.Namespace) -> list[str]:
    """What the check runs: solar-bench over the corpus on the GPU, one JSON line per problem."""
    argv = [args.corpus, "--device", args.device, "--frameworks", args.frameworks, "--budget", str(args.budget),
            "--timeout", str(args.timeout), "--jobs", "1", "--out", args.out, "--no-progress",
            "--resume" if args.resume else "--overwrite"]
    if args.plot:
        argv += ["--plot", args.plot]
    for pattern in args.match:
        argv += ["--match", pattern]
    return argv


def run_bench(args: argparse.Namespace) -> str:
    """Runs solar-bench in a child process until it ends or the deadline passes; why it stopped early, or ''."""
    cmd = [sys.executable, "-m", "solar.tools.solar_bench", *bench_argv(args)]
    try:
        subprocess.run(cmd, timeout=args.deadline, check=False)
    except subprocess.TimeoutExpired:
        return f"stopped at the {args.deadline:g} s deadline (the problems done by then are reported)"
    return ""


def run_in_process(args: argparse.Namespace) -> None:
    """The same problems measured in this process, one at a time, with the options solar-bench would use."""
    from solar.bench.batch import discover
    from solar.bench.problem import BenchOptions, bench_problem

    opts = BenchOptions(targets=["host"], frameworks=args.frameworks.split(","), device=args.device,
                        timing={"budget_s": args.budget, "warmup": 2, "min_runs": 3})
    lines = []
    for path in discover(args.corpus):
        key = os.path.relpath(path, args.corpus)
        if args.match and not any(_matches(key, p) for p in args.match):
            continue
        rec = bench_problem(path, opts)
        rec["problem"] = key
        lines.append(json.dumps(rec))
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


def _matches(key: str, pattern: str) -> bool:
    import fnmatch

    return fnmatch.fnmatch(key, pattern) or fnmatch.fnmatch(os.path.basename(key), pattern)


def problem_line(rec: dict[str, Any]) -> str:
    """One problem: status, device, least headroom per framework mode against each of MODES, violations."""
    name = rec.get("problem", "?")
    if rec.get("status") != "ok":
        err = (rec.get("errors") or [{"message": ""}])[0]
        first = (str(err.get("message", "")).strip().splitlines() or [""])[0]
        return f"{name:34s} {rec.get('status')}: {first[:100]}"
    cells = []
    for target, per_fw in rec.get("headroom", {}).items():
        for fw, per_mode in per_fw.items():
            parts = [f"{mode} {per_mode[mode]['min']:.3g}x" for mode in MODES if mode in per_mode]
            cells.append(f"{fw} vs {target}: " + ", ".join(parts))
    device = rec.get("device", {}).get("name") or rec.get("device", {}).get("kind", "?")
    line = f"{name:34s} {device}: " + ("; ".join(cells) or "no headroom (nothing measured)")
    if rec.get("noisy"):
        line += "  (noisy: measured on a busy machine)"
    violations = rec.get("violations", [])
    return line + (f"  VIOLATIONS: {len(violations)}" if violations else "")


def report(records: list[dict[str, Any]], elapsed: float, note: str = "") -> int:
    """Prints the per-problem lines and solar-bench's summary; 3 when some run beat a bound, else 0."""
    from solar.bench.summary import render_summary

    print("least headroom per problem (measured min ÷ SOL; below 1 would be a violation):")
    for rec in records:
        print("  " + problem_line(rec))
    sys.stdout.write(render_summary(records))
    print(f"gpu check: {len(records)} problems in {elapsed:.0f} s (target < {DEADLINE_S} s)"
          + (f"; {note}" if note else ""))
    return 3 if any(r.get("violations") for r in records) else 0


def read_records(path: str) -> list[dict[str, Any]]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=CORPUS, help="the folder of problems (default benchmarks/gpu_corpus)")
    ap.add_argument("--out", default="gpu_check.jsonl", help="solar-bench's records (JSON lines)")
    ap.add_argument("--plot", default="", help="the headroom plot (PNG), if wanted")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu", "auto"])
    ap.add_argument("--frameworks", default="eager,compile")
    ap.add_argument("--budget", type=float, default=0.5, help="seconds of timed runs per framework mode")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per problem")
    ap.add_argument("--deadline", type=float, default=DEADLINE_S, help="seconds for the whole check")
    ap.add_argument("--match", action="append", default=[], metavar="GLOB", help="only these problems")
    ap.add_argument("--resume", action="store_true", help="continue an earlier --out")
    ap.add_argument("--records", metavar="FILE.jsonl", help="only report an earlier run's records")
    ap.add_argument("--in-process", action="store_true", help="measure in this process (a stand-in device)")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    if args.records:
        return report(read_records(args.records), 0.0, f"records of {args.records}")
    if args.device == "cuda" and not args.in_process:
        import torch

        if not torch.cuda.is_available():
            print("gpu check: no CUDA device here (torch.cuda.is_available() is False); run it on a GPU machine, "
                  "or pass --device cpu for a dry run", file=sys.stderr)
            return 1
    note = ""
    if args.in_process:
        run_in_process(args)
    else:
        note = run_bench(args)
    return report(read_records(args.out), time.perf_counter() - start, note)


if __name__ == "__main__":
    sys.exit(main())
