"""`solar.ir.opt_driver.process` called many times in one process (the API, the fuzzer, a notebook), with a
large heap that an earlier import froze (torch's million objects), against the same calls on a bare heap as
the baseline. The ratio should stay near 1: a per-call cost that grows with the frozen heap (as asking
`gc.get_freeze_count()`, which walks it, once did) shows up here as a ratio far above 1.

    python benchmarks/in_process.py [--calls N] [--objects N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHILD = """
import sys, time
from solar.ir.diagnostics import SourceManager
from solar.ir.opt_driver import OptOptions, process
from solar.ir.startup import bulk_objects
from solar.passes import registry
objects, calls = int(sys.argv[1]), int(sys.argv[2])
with bulk_objects():  # what `import torch` under bulk_imports leaves behind
    heap = [[i, str(i), {"k": i}] for i in range(objects)]
text = open("examples/matmul.sir").read()
passes = registry.parse_pipeline("lift-einsum,fuse,sol{target=h100 annotate=false}")
start = time.process_time()
for _ in range(calls):
    process(text, "m.sir", 1, passes, OptOptions(), SourceManager(), lambda s: None, lambda s: None)
print(time.process_time() - start)
"""


def run(objects: int, calls: int) -> float:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(objects), str(calls)], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return float(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--objects", type=int, default=1_000_000)
    args = parser.parse_args()
    bare = run(0, args.calls)
    frozen = run(args.objects, args.calls)
    print(f"process() x{args.calls}: bare heap {bare:.2f} s CPU (baseline) | {args.objects:,} frozen objects "
          f"{frozen:.2f} s CPU | ratio {frozen / bare:.2f}x")


if __name__ == "__main__":
    main()
