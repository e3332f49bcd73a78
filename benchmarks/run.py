"""Executable-IR speed against PyTorch eager on the CPU (issue 3's benchmark; not a timed test).

    python benchmarks/run.py [--repeats 5] [--cases matmul,conv2d,softmax,layernorm] [--json out.json]

For matmul 1024³, conv2d (N=8, C=64, 56×56, K=64, 3×3, padding 1), softmax and layernorm over 4096×4096 it
times, in one run:
- the loop IR (`solar.kernel`, as a frontend emits one kernel per op), compiled by the Numba backend;
- the lifted IR (`solar.einsum` chains, written here by hand as lift-einsum would produce them);
- the output of the `lift-einsum` pass on the loop IR, where the pass handles the kernel;
- PyTorch eager with the same number of threads as Numba.
It prints run times (median of --repeats after one warm-up call), the ratios to eager, the compile time of
each IR apart (a fresh Numba cache directory unless --cache-dir is given, so these are cold compiles), and the
largest error against PyTorch. Targets (issue 3): lifted within 2x of eager, loop IR within 20x.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

LIFTED_TARGET = 2.0
LOOP_TARGET = 20.0

# ---- the programs -------------------------------------------------------------------------------------

MATMUL_LOOP = """
solar.func @matmul(%a: tensor<1024x1024xf32>, %b: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
  %c = solar.kernel @matmul(%a as A, %b as B) -> (C: tensor<1024x1024xf32>) {
    affine.for %i = 0 to 1024 {
      affine.for %j = 0 to 1024 {
        affine.for %k = 0 to 1024 {
          C[%i, %j] += A[%i, %k] * B[%k, %j]
        }
      }
    }
  }
  solar.return %c
}
"""

MATMUL_LIFTED = """
solar.func @matmul(%a: tensor<1024x1024xf32>, %b: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
  %c = solar.einsum @matmul "ik,kj->ij" (%a as A, %b as B) -> (C: tensor<1024x1024xf32>) {
    C += A * B
  }
  solar.return %c
}
"""

CONV_LOOP = """
solar.func @conv2d(%x: tensor<8x64x56x56xf32>, %w: tensor<64x64x3x3xf32>) -> tensor<8x64x56x56xf32> {
  %y = solar.kernel @conv2d(%x as X, %w as W) -> (Y: tensor<8x64x56x56xf32>) {
    affine.for %n = 0 to 8 {
      affine.for %k = 0 to 64 {
        affine.for %p = 0 to 56 {
          affine.for %q = 0 to 56 {
            affine.for %c = 0 to 64 {
              affine.for %r = 0 to 3 {
                affine.for %s = 0 to 3 {
                  affine.if %p + %r - 1 >= 0 and %p + %r - 1 < 56 and %q + %s - 1 >= 0 and %q + %s - 1 < 56 {
                    Y[%n, %k, %p, %q] += X[%n, %c, %p + %r - 1, %q + %s - 1] * W[%k, %c, %r, %s]
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  solar.return %y
}
"""

CONV_LIFTED = """
solar.func @conv2d(%x: tensor<8x64x56x56xf32>, %w: tensor<64x64x3x3xf32>) -> tensor<8x64x56x56xf32> {
  %y = solar.einsum @conv2d "nc(p+r-1)(q+s-1),kcrs->nkpq" (%x as X, %w as W) -> (Y: tensor<8x64x56x56xf32>) {
    Y += X * W
  }
  solar.return %y
}
"""

SOFTMAX_LOOP = """
solar.func @softmax(%x: tensor<4096x4096xf32>) -> tensor<4096x4096xf32> {
  %y = solar.kernel @softmax(%x as X) -> (Y: tensor<4096x4096xf32>) {
    local mx: tensor<4096xf32>
    local sum: tensor<4096xf32>
    affine.for %i = 0 to 4096 {
      affine.for %j = 0 to 4096 {
        mx[%i] max= X[%i, %j]
      }
      affine.for %j = 0 to 4096 {
        sum[%i] += exp(X[%i, %j] - mx[%i])
      }
      affine.for %j = 0 to 4096 {
        Y[%i, %j] = exp(X[%i, %j] - mx[%i]) / sum[%i]
      }
    }
  }
  solar.return %y
}
"""

SOFTMAX_LIFTED = """
solar.func @softmax(%x: tensor<4096x4096xf32>) -> tensor<4096x4096xf32> {
  %mx = solar.einsum @rowmax "ij->i" (%x as X) -> (M: tensor<4096xf32>) {
    M max= X
  }
  %sum = solar.einsum @rowsum "ij,i->i" (%x as X, %mx as M) -> (S: tensor<4096xf32>) {
    S += exp(X - M)
  }
  %y = solar.einsum @normalize "ij,i,i->ij" (%x as X, %mx as M, %sum as S) -> (Y: tensor<4096x4096xf32>) {
    Y = exp(X - M) / S
  }
  solar.return %y
}
"""

LAYERNORM_LOOP = """
solar.func @layernorm(%x: tensor<4096x4096xf32>, %g: tensor<4096xf32>, %b: tensor<4096xf32>) -> tensor<4096x4096xf32> {
  %y = solar.kernel @layernorm(%x as X, %g as G, %b as Bt) -> (Y: tensor<4096x4096xf32>) {
    local sum: tensor<4096xf32>
    local mean: tensor<4096xf32>
    local var: tensor<4096xf32>
    local rstd: tensor<4096xf32>
    affine.for %i = 0 to 4096 {
      affine.for %j = 0 to 4096 {
        sum[%i] += X[%i, %j]
      }
      mean[%i] = sum[%i] / 4096.0
      affine.for %j = 0 to 4096 {
        var[%i] += (X[%i, %j] - mean[%i]) * (X[%i, %j] - mean[%i])
      }
      rstd[%i] = rsqrt(var[%i] / 4096.0 + 1e-05)
      affine.for %j = 0 to 4096 {
        Y[%i, %j] = (X[%i, %j] - mean[%i]) * rstd[%i] * G[%j] + Bt[%j]
      }
    }
  }
  solar.return %y
}
"""

LAYERNORM_LIFTED = """
solar.func @layernorm(%x: tensor<4096x4096xf32>, %g: tensor<4096xf32>, %b: tensor<4096xf32>) -> tensor<4096x4096xf32> {
  %mean = solar.einsum @mean "ij->i" (%x as X) -> (M: tensor<4096xf32>) {
    M += X
    M = M / 4096.0
  }
  %rstd = solar.einsum @rstd "ij,i->i" (%x as X, %mean as M) -> (R: tensor<4096xf32>) {
    R += (X - M) * (X - M)
    R = rsqrt(R / 4096.0 + 1e-05)
  }
  %y = solar.einsum @normalize "ij,i,i,j,j->ij" (%x as X, %mean as M, %rstd as R, %g as G, %b as Bt)
      -> (Y: tensor<4096x4096xf32>) {
    Y = (X - M) * R * G + Bt
  }
  solar.return %y
}
"""


def _torch_cases() -> dict[str, Callable[..., Any]]:
    import torch
    import torch.nn.functional as F

    return {
        "matmul": lambda a, b: torch.matmul(a, b),
        "conv2d": lambda x, w: F.conv2d(x, w, padding=1),
        "softmax": lambda x: torch.softmax(x, dim=-1),
        "layernorm": lambda x, g, b: F.layer_norm(x, (x.shape[-1],), g, b, 1e-5),
    }


CASES: dict[str, tuple[str, str, str]] = {
    # name: (description, loop IR, lifted IR)
    "matmul": ("matmul 1024x1024x1024", MATMUL_LOOP, MATMUL_LIFTED),
    "conv2d": ("conv2d N8 C64 56x56 K64 3x3 pad1", CONV_LOOP, CONV_LIFTED),
    "softmax": ("softmax 4096x4096", SOFTMAX_LOOP, SOFTMAX_LIFTED),
    "layernorm": ("layernorm 4096x4096", LAYERNORM_LOOP, LAYERNORM_LIFTED),
}


# ---- measuring ----------------------------------------------------------------------------------------


@dataclass
class Timing:
    seconds: float | None = None  # median run time
    compile_seconds: float | None = None
    max_rel_err: float | None = None  # max |ir - torch| / max |torch|
    note: str = ""


@dataclass
class Result:
    case: str
    description: str
    torch: Timing = field(default_factory=Timing)
    loop: Timing = field(default_factory=Timing)
    lifted: Timing = field(default_factory=Timing)
    pass_lifted: Timing = field(default_factory=Timing)


def median_time(fn: Callable[[], Any], repeats: int) -> float:
    fn()  # warm-up: caches, thread pools, page faults of the first allocation
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def time_ir(text: str, inputs: list[np.ndarray], reference: np.ndarray, repeats: int) -> Timing:
    from solar.backends.executor import prepare
    from solar.ir import parse_and_verify

    program = prepare(parse_and_verify(text))
    compile_s = program.compile()
    out: list[np.ndarray] = []

    def call() -> None:
        out[:] = program(inputs)

    seconds = median_time(call, repeats)
    err = float(np.abs(out[0].astype(np.float64) - reference).max() / max(np.abs(reference).max(), 1e-30))
    return Timing(seconds, compile_s, err)


def lift_with_pass(text: str) -> tuple[str | None, str]:
    """The lift-einsum pass applied to the loop IR: (IR text, "") or (None, why not)."""
    try:
        from solar.ir.diagnostics import SourceManager
        from solar.ir.opt_driver import OptOptions, process
        from solar.passes import registry

        lift = registry.create("lift-einsum")
    except Exception as err:  # the pass may not exist in this checkout
        return None, f"no lift-einsum pass ({type(err).__name__})"
    messages: list[str] = []
    try:
        result = process(text, "bench.sir", 1, [lift], OptOptions(), SourceManager(), messages.append,
                         lambda _: None)
    except Exception as err:
        return None, f"lift-einsum failed: {type(err).__name__}: {err}"
    if not result.ok or result.output is None:
        first = result.diagnostics.diagnostics[0].message if result.diagnostics.diagnostics else "failed"
        return None, f"lift-einsum: {first}"
    if "solar.kernel" in result.output:
        return None, "lift-einsum left the kernel as a loop nest"
    return result.output, ""


def run_case(name: str, repeats: int) -> Result:
    import torch

    description, loop_ir, lifted_ir = CASES[name]
    rng = np.random.default_rng(0)
    if name == "matmul":
        arrays = [rng.standard_normal((1024, 1024), dtype=np.float32) for _ in range(2)]
    elif name == "conv2d":
        arrays = [rng.standard_normal((8, 64, 56, 56), dtype=np.float32),
                  rng.standard_normal((64, 64, 3, 3), dtype=np.float32) * np.float32(1 / 24)]
    elif name == "softmax":
        arrays = [rng.standard_normal((4096, 4096), dtype=np.float32)]
    else:
        arrays = [rng.standard_normal((4096, 4096), dtype=np.float32), rng.standard_normal(4096, dtype=np.float32),
                  rng.standard_normal(4096, dtype=np.float32)]
    result = Result(name, description)
    fn = _torch_cases()[name]
    tensors = [torch.from_numpy(a) for a in arrays]
    with torch.no_grad():
        ref = fn(*tensors).numpy().astype(np.float64)
        result.torch = Timing(median_time(lambda: fn(*tensors), repeats))
    result.loop = time_ir(loop_ir, arrays, ref, max(1, min(repeats, 3)))
    result.lifted = time_ir(lifted_ir, arrays, ref, repeats)
    lifted_text, why = lift_with_pass(loop_ir)
    if lifted_text is None:
        result.pass_lifted = Timing(note=why)
    else:
        result.pass_lifted = time_ir(lifted_text, arrays, ref, repeats)
    return result


# ---- reporting ----------------------------------------------------------------------------------------


def _ms(t: Timing, base: float | None) -> str:
    if t.seconds is None:
        return "n/a"
    ratio = f" ({t.seconds / base:.2f}x)" if base else ""
    return f"{t.seconds * 1e3:9.1f} ms{ratio}"


def report(results: list[Result], threads: int) -> str:
    lines = [f"SOLAR executable IR vs PyTorch eager, CPU, {threads} thread(s); times are medians, ratios IR/eager",
             ""]
    header = f"{'case':34} {'torch eager':>14} {'loop IR':>22} {'lifted IR':>22} {'lift-einsum pass':>22}"
    lines += [header, "-" * len(header)]
    for r in results:
        base = r.torch.seconds
        lines.append(f"{r.description:34} {_ms(r.torch, None):>14} {_ms(r.loop, base):>22} "
                     f"{_ms(r.lifted, base):>22} {_ms(r.pass_lifted, base):>22}")
    lines += ["", "first-call compile time (Numba, separate from the run times above) and error vs PyTorch:"]
    for r in results:
        parts = []
        for label, t in (("loop", r.loop), ("lifted", r.lifted), ("pass", r.pass_lifted)):
            if t.seconds is None:
                parts.append(f"{label}: {t.note}")
            else:
                parts.append(f"{label}: compile {t.compile_seconds:.2f} s, max rel err {t.max_rel_err:.1e}")
        lines.append(f"  {r.case:10} " + "; ".join(parts))
    lines += ["", f"targets: lifted IR within {LIFTED_TARGET:g}x of eager, loop IR within {LOOP_TARGET:g}x"]
    for r in results:
        base = r.torch.seconds or 1.0
        checks = []
        for label, t, target in (("loop", r.loop, LOOP_TARGET), ("lifted", r.lifted, LIFTED_TARGET)):
            if t.seconds is not None:
                ratio = t.seconds / base
                checks.append(f"{label} {ratio:.2f}x {'met' if ratio <= target else 'MISSED'}")
        lines.append(f"  {r.case:10} " + ", ".join(checks))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per measurement (median)")
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated subset of {','.join(CASES)}")
    parser.add_argument("--cache-dir", help="Numba cache directory (default: a fresh one, for cold compile times)")
    parser.add_argument("--json", help="also write the results as JSON")
    args = parser.parse_args(argv)
    names = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in names if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(CASES)}")
    os.environ["SOLAR_CACHE_DIR"] = args.cache_dir or tempfile.mkdtemp(prefix="solar-bench-")

    import numba
    import torch

    threads = numba.get_num_threads()
    torch.set_num_threads(threads)  # the same cores for both
    results = []
    for name in names:
        print(f"running {name} ...", file=sys.stderr, flush=True)
        results.append(run_case(name, args.repeats))
    print(report(results, threads))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"threads": threads, "results": [asdict(r) for r in results]}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
