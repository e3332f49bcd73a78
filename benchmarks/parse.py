"""Parse + verify + print speed: SIR (ours) against xDSL on the equivalent MLIR affine-dialect program.

Generates one module of N matmul-like kernels (varied shapes, element types, names; sometimes a bias
written before the reduction, sometimes a ReLU epilogue after it; each a 3-deep loop nest with a `+=`
reduction), and the same computation in MLIR (one `func.func` per kernel with memref arguments, `affine.for`
loops, `affine.load`, `arith.mulf`, `arith.addf`, `affine.store`). MLIR has no implicit reduction
identity, so its functions store the bias or a zero into the output before the reduction loop, which is
what SIR's `+=` means.

Both are timed in this one process, each as parse + verify + print of the whole text. The first run of
each is reported apart ("cold": it includes loading our grammar tables, or xDSL's lazy set-up); then
`--repeat` warm runs of the two alternate, so that both see the same load on a shared machine, and the
best and the median count (CPU time is printed too: it is the steadier figure on a busy machine). Imports
are timed apart. Runs offline; xDSL is optional (`pip install xdsl==0.75.0`, the `bench` extra).

    python benchmarks/parse.py [--kernels N] [--repeat R] [--seed S] [--no-xdsl] [--profile]
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SIZES = (16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 2048, 4096)
DTYPES = ("f32", "f32", "f32", "bf16", "f16", "f64")
PREFIXES = ("mm", "linear", "proj", "qk", "gemm", "fc", "ffn_up", "ffn_down", "attn_out", "score")
# (lhs, rhs, out, bias) tensor names inside a kernel, and the loop index names.
TENSOR_NAMES = (("A", "B", "C", "Bias"), ("X", "W", "Y", "B"), ("Q", "K", "S", "Off"), ("lhs", "rhs", "acc", "b"))
INDEX_NAMES = (("i", "j", "k"), ("m", "n", "r"), ("row", "col", "red"), ("i0", "i1", "i2"))


@dataclass(frozen=True)
class Kernel:
    name: str
    m: int
    n: int
    k: int
    dtype: str
    rhs_transposed: bool  # rhs is N×K (a linear layer's weight) instead of K×N
    bias: bool  # out[i, j] = bias[j] before the reduction
    relu: bool  # out[i, j] = max(out[i, j], 0) after it
    tensors: tuple[str, str, str, str]
    indices: tuple[str, str, str]


def generate_kernels(count: int, seed: int) -> list[Kernel]:
    rng = random.Random(seed)
    return [
        Kernel(
            name=f"{rng.choice(PREFIXES)}_{n}",
            m=rng.choice(SIZES), n=rng.choice(SIZES), k=rng.choice(SIZES),
            dtype=rng.choice(DTYPES),
            rhs_transposed=rng.random() < 0.4,
            bias=rng.random() < 0.4,
            relu=rng.random() < 0.3,
            tensors=rng.choice(TENSOR_NAMES),
            indices=rng.choice(INDEX_NAMES),
        )
        for n in range(count)
    ]


# ---- SIR ------------------------------------------------------------------------------------------


def sir_kernel(kn: Kernel) -> str:
    a, b, c, bias = kn.tensors
    i, j, k = kn.indices
    dt = kn.dtype
    rhs_shape, rhs_index = (f"{kn.n}x{kn.k}", f"%{j}, %{k}") if kn.rhs_transposed else (
        f"{kn.k}x{kn.n}", f"%{k}, %{j}")
    args = [f"%lhs: tensor<{kn.m}x{kn.k}x{dt}>", f"%rhs: tensor<{rhs_shape}x{dt}>"]
    binds = [f"%lhs as {a}", f"%rhs as {b}"]
    if kn.bias:
        args.append(f"%bias: tensor<{kn.n}x{dt}>")
        binds.append(f"%bias as {bias}")
    out = f"tensor<{kn.m}x{kn.n}x{dt}>"
    lines = [
        f"  solar.func @{kn.name}({', '.join(args)}) -> {out} {{",
        f"    %out = solar.kernel @{kn.name}({', '.join(binds)}) -> ({c}: {out}) {{",
        f"      affine.for %{i} = 0 to {kn.m} {{",
        f"        affine.for %{j} = 0 to {kn.n} {{",
    ]
    if kn.bias:
        lines.append(f"          {c}[%{i}, %{j}] = {bias}[%{j}]")
    lines += [
        f"          affine.for %{k} = 0 to {kn.k} {{",
        f"            {c}[%{i}, %{j}] += {a}[%{i}, %{k}] * {b}[{rhs_index}]",
        "          }",
    ]
    if kn.relu:
        lines.append(f"          {c}[%{i}, %{j}] = max({c}[%{i}, %{j}], 0.0)")
    lines += ["        }", "      }", "    }", "    solar.return %out", "  }"]
    return "\n".join(lines)


def sir_module(kernels: list[Kernel]) -> str:
    return "solar.module @bench {\n" + "\n\n".join(sir_kernel(kn) for kn in kernels) + "\n}\n"


# ---- MLIR (affine dialect) ------------------------------------------------------------------------


def mlir_kernel(kn: Kernel) -> str:
    i, j, k = kn.indices
    dt = kn.dtype
    lhs_t = f"memref<{kn.m}x{kn.k}x{dt}>"
    rhs_t = f"memref<{kn.n}x{kn.k}x{dt}>" if kn.rhs_transposed else f"memref<{kn.k}x{kn.n}x{dt}>"
    rhs_index = f"%{j}, %{k}" if kn.rhs_transposed else f"%{k}, %{j}"
    out_t = f"memref<{kn.m}x{kn.n}x{dt}>"
    args = [f"%A: {lhs_t}", f"%B: {rhs_t}"]
    if kn.bias:
        args.append(f"%bias: memref<{kn.n}x{dt}>")
    args.append(f"%C: {out_t}")
    lines = [f"  func.func @{kn.name}({', '.join(args)}) {{"]
    if not kn.bias or kn.relu:
        lines.append(f"    %zero = arith.constant 0.0 : {dt}")
    lines += [
        f"    affine.for %{i} = 0 to {kn.m} {{",
        f"      affine.for %{j} = 0 to {kn.n} {{",
    ]
    if kn.bias:
        lines += [
            f"        %bv = affine.load %bias[%{j}] : memref<{kn.n}x{dt}>",
            f"        affine.store %bv, %C[%{i}, %{j}] : {out_t}",
        ]
    else:
        lines.append(f"        affine.store %zero, %C[%{i}, %{j}] : {out_t}")
    lines += [
        f"        affine.for %{k} = 0 to {kn.k} {{",
        f"          %a = affine.load %A[%{i}, %{k}] : {lhs_t}",
        f"          %b = affine.load %B[{rhs_index}] : {rhs_t}",
        f"          %c = affine.load %C[%{i}, %{j}] : {out_t}",
        f"          %p = arith.mulf %a, %b : {dt}",
        f"          %s = arith.addf %c, %p : {dt}",
        f"          affine.store %s, %C[%{i}, %{j}] : {out_t}",
        "        }",
    ]
    if kn.relu:
        lines += [
            f"        %r = affine.load %C[%{i}, %{j}] : {out_t}",
            f"        %y = arith.maximumf %r, %zero : {dt}",
            f"        affine.store %y, %C[%{i}, %{j}] : {out_t}",
        ]
    lines += ["      }", "    }", "    func.return", "  }"]
    return "\n".join(lines)


def mlir_module(kernels: list[Kernel]) -> str:
    return "builtin.module {\n" + "\n".join(mlir_kernel(kn) for kn in kernels) + "\n}\n"


# ---- the two pipelines ----------------------------------------------------------------------------


def sir_pipeline() -> tuple[Callable[[str], str], Callable[[str], dict[str, float]]]:
    from solar.ir.diagnostics import DiagnosticEngine
    from solar.ir.parser import parse_module
    from solar.ir.printer import print_module
    from solar.ir.verifier import verify

    def run(text: str) -> str:
        engine = DiagnosticEngine()
        module = parse_module(text, "bench.sir", engine)
        if not verify(module, engine) or engine.has_errors:
            raise SystemExit("the generated SIR does not verify:\n" + engine.format_all())
        return print_module(module)

    def phases(text: str) -> dict[str, float]:
        engine = DiagnosticEngine()
        t0 = time.perf_counter()
        module = parse_module(text, "bench.sir", engine)
        t1 = time.perf_counter()
        verify(module, engine)
        t2 = time.perf_counter()
        print_module(module)
        t3 = time.perf_counter()
        return {"parse": t1 - t0, "verify": t2 - t1, "print": t3 - t2}

    return run, phases


def xdsl_pipeline() -> tuple[Callable[[str], str], Callable[[str], dict[str, float]], str, float] | str:
    """The xDSL pipeline (run, phases, version, import seconds), or why it is unavailable."""
    t0 = time.perf_counter()
    try:
        import xdsl
        from xdsl.dialects.affine import Affine
        from xdsl.dialects.arith import Arith
        from xdsl.dialects.builtin import Builtin
        from xdsl.dialects.func import Func
        from xdsl.dialects.memref import MemRef
        from xdsl.parser import Parser
        from xdsl.printer import Printer
        try:
            from xdsl.context import Context
        except ImportError:  # older xDSL releases called it MLContext
            from xdsl.ir import MLContext as Context  # type: ignore[no-redef, attr-defined]
    except ImportError as err:
        return f"xDSL is not importable ({err}); install it with `pip install xdsl==0.75.0` to compare"
    import_seconds = time.perf_counter() - t0

    def context() -> Any:
        ctx = Context()
        for dialect in (Builtin, Func, Affine, Arith, MemRef):
            ctx.load_dialect(dialect)
        return ctx

    def run(text: str) -> str:
        module = Parser(context(), text, "bench.mlir").parse_module()
        module.verify()
        out = io.StringIO()
        Printer(stream=out).print_op(module)
        return out.getvalue()

    def phases(text: str) -> dict[str, float]:
        t0 = time.perf_counter()
        module = Parser(context(), text, "bench.mlir").parse_module()
        t1 = time.perf_counter()
        module.verify()
        t2 = time.perf_counter()
        Printer(stream=io.StringIO()).print_op(module)
        t3 = time.perf_counter()
        return {"parse": t1 - t0, "verify": t2 - t1, "print": t3 - t2}

    return run, phases, getattr(xdsl, "__version__", "?"), import_seconds


def timed(fn: Callable[[str], Any], text: str) -> tuple[float, float]:
    """Wall-clock and CPU seconds of `fn(text)`; CPU time is the steadier one on a busy machine."""
    gc.collect()
    w0, c0 = time.perf_counter(), time.process_time()
    fn(text)
    return time.perf_counter() - w0, time.process_time() - c0


def best_phases(phases: Callable[[str], dict[str, float]], text: str, repeat: int) -> dict[str, float]:
    runs = []
    for _ in range(repeat):
        gc.collect()
        runs.append(phases(text))
    return {key: min(r[key] for r in runs) for key in runs[0]}


def report(name: str, n: int, cold: tuple[float, float], warm: list[tuple[float, float]], split: dict[str, float],
           cold_note: str) -> None:
    walls, cpus = [w for w, _ in warm], [c for _, c in warm]
    best, median = min(walls), statistics.median(walls)
    print(name)
    print(f"  cold    {cold[0]:7.3f} s {n / cold[0]:9.0f} kernels/s   ({cold_note})")
    print(f"  warm    {best:7.3f} s {n / best:9.0f} kernels/s   (best of {len(warm)}; median {median:.3f} s = "
          f"{n / median:.0f} kernels/s; best CPU time {min(cpus):.3f} s)")
    total = sum(split.values())
    print("  split  " + "   ".join(f"{k} {v:6.3f} s ({100 * v / total:2.0f}%)" for k, v in split.items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--kernels", type=int, default=1000, help="kernels in the module (default 1000)")
    ap.add_argument("--repeat", type=int, default=3, help="warm runs of each pipeline (default 3)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the kernel generator")
    ap.add_argument("--no-xdsl", action="store_true", help="time only SIR")
    ap.add_argument("--profile", action="store_true", help="print a cProfile of one warm SIR run")
    args = ap.parse_args(argv)
    n, repeat = max(args.kernels, 1), max(args.repeat, 1)

    kernels = generate_kernels(n, args.seed)
    sir_text, mlir_text = sir_module(kernels), mlir_module(kernels)
    print(f"{n} matmul-like kernels (seed {args.seed}): {sum(k.bias for k in kernels)} with a bias, "
          f"{sum(k.relu for k in kernels)} with a ReLU epilogue")
    print(f"  SIR:  {sir_text.count(chr(10)):7d} lines {len(sir_text):9d} bytes")
    print(f"  MLIR: {mlir_text.count(chr(10)):7d} lines {len(mlir_text):9d} bytes")
    print("each run: parse + verify + print of the whole module, in this one process; warm runs of the two "
          "alternate")
    if hasattr(os, "getloadavg"):
        print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs (noise if high)")
    print()

    t0 = time.perf_counter()
    sir_run, sir_phases = sir_pipeline()
    sir_import = time.perf_counter() - t0
    xdsl = None if args.no_xdsl else xdsl_pipeline()
    if isinstance(xdsl, str):
        print(f"xDSL: skipped: {xdsl}\n")
        xdsl = None

    sir_cold = timed(sir_run, sir_text)
    printed = sir_run(sir_text)
    if printed != sir_run(printed):
        print("warning: SIR print -> parse -> print is not stable on the benchmark module", file=sys.stderr)
    x_cold = timed(xdsl[0], mlir_text) if xdsl else 0.0
    sir_warm: list[tuple[float, float]] = []
    x_warm: list[tuple[float, float]] = []
    for _ in range(repeat):  # alternating, so that both see the same load on a shared machine
        sir_warm.append(timed(sir_run, sir_text))
        if xdsl:
            x_warm.append(timed(xdsl[0], mlir_text))

    report(f"ours (SIR), import {sir_import:.3f} s", n, sir_cold, sir_warm,
           best_phases(sir_phases, sir_text, repeat), "first run: includes loading the grammar tables")
    if args.profile:
        import cProfile
        import pstats
        prof = cProfile.Profile()
        prof.runcall(sir_run, sir_text)
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    if not xdsl:
        return 0
    print()
    x_split = best_phases(xdsl[1], mlir_text, 1)
    report(f"xDSL {xdsl[2]} (MLIR affine), import {xdsl[3]:.3f} s", n, x_cold, x_warm, x_split,
           "first run: includes xDSL's lazy set-up")
    ratios = {
        "best wall": min(w for w, _ in x_warm) / min(w for w, _ in sir_warm),
        "median wall": statistics.median(w for w, _ in x_warm) / statistics.median(w for w, _ in sir_warm),
        "best CPU": min(c for _, c in x_warm) / min(c for _, c in sir_warm),
    }
    print("\nratio ours / xDSL in kernels/s: warm " + ", ".join(f"{v:.1f}x ({k})" for k, v in ratios.items())
          + f"; cold {x_cold[0] / sir_cold[0]:.1f}x   (target: at least 5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
