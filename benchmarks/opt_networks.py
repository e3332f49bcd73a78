"""Whole networks priced: `solar-opt --lift-einsum --fuse --sol=h100` on a translated ResNet-101 and DenseNet-201
(benchmarks/network_corpus), this checkout against a base commit, alternated run by run.

    python benchmarks/opt_networks.py                    # base: the last commit of the round before (BASE)
    python benchmarks/opt_networks.py --base HEAD~5 --repeat 5 --networks resnet101

Both sides price the same SIR, translated once by this checkout (`--no-validate`; the IR is what is timed, not
the translation). The base runs from a `git worktree` of its commit (made under the temporary directory and
kept for later runs) with this interpreter, its packages mapped as its own pyproject.toml maps them, so
nothing is installed. Each network runs base, branch, base, branch ... in one process tree, so a load that
comes and goes weighs on both sides alike; wall time and CPU time (user + system of the child) are printed
as medians. Issue 42's target is under 2 s wall per network on 2 idle cores.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The last commit of the round before the view unions and loop reads landed (2026-12-02, issue 26's
# networks), whose whole-network figures issue 42 compares against; the repository has no release tags.
BASE = "3afd9a4"
PIPELINE = ["--lift-einsum", "--fuse", "--sol=h100"]

# Runs a tool (argv[2], as `solar_opt`) from a source tree (argv[1]): its packages found where its
# pyproject.toml puts them.
RUNNER = """
import importlib, importlib.abc, importlib.util, pathlib, sys, tomllib
root, tool = pathlib.Path(sys.argv.pop(1)), sys.argv.pop(1)
dirs = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
class Tree(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in dirs:
            return None
        where = root / dirs[name]
        return importlib.util.spec_from_file_location(name, where / "__init__.py",
                                                      submodule_search_locations=[str(where)])
sys.meta_path.insert(0, Tree())
sys.argv[0] = tool.replace("_", "-")
sys.exit(importlib.import_module("solar.tools." + tool).main())
"""


def base_tree(rev: str) -> Path:
    """A worktree of `rev` under the temporary directory (made once, reused)."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", rev], check=True,
                            capture_output=True, text=True).stdout.strip()
    where = Path(tempfile.gettempdir()) / f"solar-base-{commit}"
    if not (where / "pyproject.toml").exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(where), commit],
                       check=True, capture_output=True)
    return where


def translate(network: str, out_dir: Path) -> Path:
    sir = out_dir / f"{network}.sir"
    if not sir.exists():
        source = ROOT / "benchmarks" / "network_corpus" / f"{network}.py"
        subprocess.run([sys.executable, "-c", RUNNER, str(ROOT), "solar_translate", str(source), "--no-validate",
                        "-o", str(sir)], check=True)
    return sir


def timed(tree: Path, sir: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one solar-opt run (its output discarded; a failure stops the benchmark)."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, str(tree), "solar_opt", str(sir), *PIPELINE],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"opt_networks: solar-opt from {tree} on {sir.name} exited {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def alternated(sides: dict[str, Callable[[], tuple[float, float]]], repeat: int
               ) -> tuple[dict[str, float], dict[str, float]]:
    """Runs each side `repeat` times, the sides alternated so that each sees the same load; the median wall
    and CPU seconds of each side."""
    runs: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
    for _ in range(repeat):
        for side, run in sides.items():
            runs[side].append(run())
    wall = {side: statistics.median(w for w, _ in r) for side, r in runs.items()}
    cpu = {side: statistics.median(c for _, c in r) for side, r in runs.items()}
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=BASE, help=f"the commit to compare with (default {BASE})")
    ap.add_argument("--repeat", type=int, default=3, help="runs per side and network (alternated)")
    ap.add_argument("--networks", default="resnet101,densenet201")
    ap.add_argument("--sir-dir", type=Path, help="where the translated networks are kept (default: a temporary one)")
    args = ap.parse_args()
    base = base_tree(args.base)
    sir_dir = args.sir_dir or Path(tempfile.mkdtemp(prefix="opt_networks_"))
    sir_dir.mkdir(parents=True, exist_ok=True)
    print(f"solar-opt {' '.join(PIPELINE)}; base {args.base} ({base}), branch {ROOT}; "
          f"{args.repeat} runs each, alternated; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for network in args.networks.split(","):
        sir = translate(network, sir_dir)
        wall, cpu = alternated({"base": partial(timed, base, sir), "branch": partial(timed, ROOT, sir)}, args.repeat)
        print(f"{network:12s} base {wall['base']:6.2f} s wall {cpu['base']:6.2f} s CPU | "
              f"branch {wall['branch']:6.2f} s wall {cpu['branch']:6.2f} s CPU | "
              f"CPU x{cpu['base'] / cpu['branch']:.2f}")


if __name__ == "__main__":
    main()
