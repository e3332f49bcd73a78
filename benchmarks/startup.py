"""Start-up cost of every SOLAR command, beside the interpreter's own (`python -c pass`) as the baseline.

Each command runs `--repeat` times as a fresh process; the runs of all commands alternate, so that every
command sees the same load on a shared machine. The figure is the CPU time of the child (user + system,
from the kernel's accounting), the steadier figure on a busy machine; wall time is printed too. The target
for `solar-opt` on a small file is 0.25 s of CPU at the median (issue 13).

    python benchmarks/startup.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)


def commands() -> list[tuple[str, list[str]]]:
    def tool(name: str) -> str:
        path = os.path.join(BIN, name)
        return path if os.path.exists(path) else name

    return [
        ("python -c pass (baseline)", [sys.executable, "-c", "pass"]),
        ("solar-opt examples/matmul.sir", [tool("solar-opt"), "examples/matmul.sir", "-o", os.devnull]),
        ("solar-opt --help", [tool("solar-opt"), "--help"]),
        ("solar-opt --version", [tool("solar-opt"), "--version"]),
        ("solar-run --help", [tool("solar-run"), "--help"]),
        ("solar-translate --help", [tool("solar-translate"), "--help"]),
        ("solar-bench --help", [tool("solar-bench"), "--help"]),
        ("python -c 'import solar' (the API)", [sys.executable, "-c", "import solar"]),
    ]


def run_once(argv: list[str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one run of `argv` as a child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {err.strip()}")
    return usage.ru_utime + usage.ru_stime, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs of each command (default 5)")
    args = ap.parse_args()
    cmds = commands()
    for _, argv in cmds:  # warm-up: the first run may compile bytecode or fill the grammar cache
        run_once(argv)
    cpu: dict[str, list[float]] = {name: [] for name, _ in cmds}
    wall: dict[str, list[float]] = {name: [] for name, _ in cmds}
    for _ in range(args.repeat):
        for name, argv in cmds:
            c, w = run_once(argv)
            cpu[name].append(c)
            wall[name].append(w)
    base = statistics.median(cpu[cmds[0][0]])
    print(f"start-up, median of {args.repeat} runs (CPU = user + system of the child)")
    print(f"{'command':<32} {'CPU s':>7} {'wall s':>7} {'CPU - baseline':>15}")
    for name, _ in cmds:
        c = statistics.median(cpu[name])
        print(f"{name:<32} {c:>7.3f} {statistics.median(wall[name]):>7.3f} {c - base:>+15.3f}")
    opt = statistics.median(cpu["solar-opt examples/matmul.sir"])
    print(f"solar-opt on a small file: {opt:.3f} s CPU (target <= 0.25 s); python -c pass: {base:.3f} s; "
          f"ratio {opt / max(base, 1e-9):.1f}x")


if __name__ == "__main__":
    main()
