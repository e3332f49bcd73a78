"""Lifting speed: `--lift-affine` and `--lift-einsum` on a generated module of mixed kernels.

Generates one module of N kernels (default 600), a random mix of matmuls (plain, transposed weight, batched,
with a bias written before the reduction, with a ReLU after it), 2-d convolutions (stride, padding as
`affine.if` guards, dilation, bias), softmaxes and layernorms, with varied shapes, element types and names.
Each kernel is its own `solar.func`. Every kernel is lifted alone (a module holding only its function), so
that the time of each pass per kernel is measured; the median, the 90th percentile and the mean are printed
per pass and per kernel kind, then the time of both passes on the whole module at once (solar-opt's view).
ISL caches are warm only where kernels repeat a structure, as in a real network; `--cold` clears them
before every kernel.

    python benchmarks/lift.py [--kernels N] [--seed S] [--cold] [--wall] [--profile]

Target (issue 4): a median of at most 10 ms per kernel for lift-affine and lift-einsum together.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.ops import ModuleOp
from solar.ir.parser import parse_module
from solar.ir.pass_manager import Pass, PassContext
from solar.ir.verifier import verify
from solar.passes import registry

SIZES = (16, 32, 48, 64, 96, 128, 256, 384, 512, 768, 1024)
DTYPES = ("f32", "f32", "bf16", "f16")
KINDS = ("matmul", "conv", "softmax", "layernorm")
WALL = False  # --wall: time with the wall clock instead of CPU time


@dataclass(frozen=True)
class Generated:
    kind: str
    text: str  # one solar.func


def matmul(rng: random.Random, n: int) -> Generated:
    m, k, nn = (rng.choice(SIZES) for _ in range(3))
    dt = rng.choice(DTYPES)
    batch = rng.choice((0, 0, 2, 4, 8))
    transposed, bias, relu = rng.random() < 0.5, rng.random() < 0.4, rng.random() < 0.3
    b = "%b, " if batch else ""
    bd = f"{batch}x" if batch else ""
    w_shape = f"{nn}x{k}" if transposed else f"{k}x{nn}"
    w_index = f"{b}%j, %k" if transposed else f"{b}%k, %j"
    args = [f"%x: tensor<{bd}{m}x{k}x{dt}>", f"%w: tensor<{bd}{w_shape}x{dt}>"]
    binds = ["%x as X", "%w as W"]
    if bias:
        args.append(f"%bias: tensor<{nn}x{dt}>")
        binds.append("%bias as Bias")
    out = f"tensor<{bd}{m}x{nn}x{dt}>"
    body = [f"Y[{b}%i, %j] = Bias[%j]"] if bias else []
    body += [f"affine.for %k = 0 to {k} {{", f"  Y[{b}%i, %j] += X[{b}%i, %k] * W[{w_index}]", "}"]
    if relu:
        body.append(f"Y[{b}%i, %j] = max(Y[{b}%i, %j], 0.0)")
    loops = ([("b", batch)] if batch else []) + [("i", m), ("j", nn)]
    return Generated("matmul", _func(f"mm_{n}", args, binds, f"Y: {out}", out, loops, body))


def conv(rng: random.Random, n: int) -> Generated:
    c, kk = rng.choice((3, 8, 16, 32, 64)), rng.choice((8, 16, 32, 64))
    h = rng.choice((8, 14, 16, 28, 32, 56))
    r = rng.choice((1, 3, 5))
    stride, dil = rng.choice((1, 1, 2)), rng.choice((1, 1, 2))
    pad = rng.choice((0, (r - 1) // 2 * dil))
    oh = (h + 2 * pad - dil * (r - 1) - 1) // stride + 1
    dt = rng.choice(DTYPES)
    out = f"tensor<1x{kk}x{oh}x{oh}x{dt}>"
    row, col = (f"{stride} * %{o} + {dil} * %{w} - {pad}".replace("1 * ", "") for o, w in (("p", "r"), ("q", "s")))
    access = f"Y[%n, %k, %p, %q] += X[%n, %c, {row}, {col}] * W[%k, %c, %r, %s]"
    if pad:
        access = f"affine.if {row} >= 0 and {row} < {h} and {col} >= 0 and {col} < {h} {{ {access} }}"
    body = ["Y[%n, %k, %p, %q] = Bias[%k]", f"affine.for %c = 0 to {c} {{",
            f"  affine.for %r = 0 to {r} {{", f"    affine.for %s = 0 to {r} {{", f"      {access}", "    }", "  }",
            "}"]
    args = [f"%x: tensor<1x{c}x{h}x{h}x{dt}>", f"%w: tensor<{kk}x{c}x{r}x{r}x{dt}>", f"%bias: tensor<{kk}x{dt}>"]
    binds = ["%x as X", "%w as W", "%bias as Bias"]
    loops = [("n", 1), ("k", kk), ("p", oh), ("q", oh)]
    return Generated("conv", _func(f"conv_{n}", args, binds, f"Y: {out}", out, loops, body))


def softmax(rng: random.Random, n: int) -> Generated:
    rows, cols = rng.choice(SIZES), rng.choice(SIZES)
    t = f"tensor<{rows}x{cols}xf32>"
    body = [f"local mx: tensor<{rows}xf32>", f"local sum: tensor<{rows}xf32>", f"affine.for %i = 0 to {rows} {{",
            f"  affine.for %j = 0 to {cols} {{ mx[%i] max= X[%i, %j] }}",
            f"  affine.for %j = 0 to {cols} {{ sum[%i] += exp(X[%i, %j] - mx[%i]) }}",
            f"  affine.for %j = 0 to {cols} {{ Y[%i, %j] = exp(X[%i, %j] - mx[%i]) / sum[%i] }}", "}"]
    return Generated("softmax", _func(f"softmax_{n}", [f"%x: {t}"], ["%x as X"], f"Y: {t}", t, [], body))


def layernorm(rng: random.Random, n: int) -> Generated:
    rows, cols = rng.choice(SIZES), rng.choice(SIZES)
    t = f"tensor<{rows}x{cols}xf32>"
    v = f"tensor<{rows}xf32>"
    body = [f"local mean: {v}", f"local var: {v}", f"local rstd: {v}", f"affine.for %i = 0 to {rows} {{",
            f"  affine.for %j = 0 to {cols} {{ mean[%i] += X[%i, %j] / {cols}.0 }}",
            f"  affine.for %j = 0 to {cols} {{ var[%i] += (X[%i, %j] - mean[%i]) * (X[%i, %j] - mean[%i]) }}",
            f"  rstd[%i] = rsqrt(var[%i] / {cols}.0 + 1e-05)",
            f"  affine.for %j = 0 to {cols} {{ Y[%i, %j] = (X[%i, %j] - mean[%i]) * rstd[%i] * G[%j] + Bt[%j] }}",
            "}"]
    args = [f"%x: {t}", f"%g: tensor<{cols}xf32>", f"%b: tensor<{cols}xf32>"]
    return Generated("layernorm", _func(f"layernorm_{n}", args, ["%x as X", "%g as G", "%b as Bt"], f"Y: {t}", t,
                                        [], body))


def _func(name: str, args: list[str], binds: list[str], out: str, out_type: str, loops: list[tuple[str, int]],
          body: list[str]) -> str:
    lines = [f"solar.func @{name}({', '.join(args)}) -> {out_type} {{",
             f"  %y = solar.kernel @{name}({', '.join(binds)}) -> ({out}) {{"]
    depth = 2
    for var, extent in loops:
        lines.append("  " * depth + f"affine.for %{var} = 0 to {extent} {{")
        depth += 1
    lines += ["  " * depth + line for line in body]
    for _ in loops:
        depth -= 1
        lines.append("  " * depth + "}")
    lines += ["  }", "  solar.return %y", "}"]
    return "\n".join(lines)


GENERATORS: dict[str, Callable[[random.Random, int], Generated]] = {
    "matmul": matmul, "conv": conv, "softmax": softmax, "layernorm": layernorm}


def generate(count: int, seed: int) -> list[Generated]:
    rng = random.Random(seed)
    return [GENERATORS[KINDS[n % len(KINDS)]](rng, n) for n in range(count)]


def parse(text: str) -> ModuleOp:
    engine = DiagnosticEngine()
    module = parse_module(text, "bench.sir", engine)
    if engine.has_errors or not verify(module, engine):
        raise SystemExit("the generated SIR does not verify:\n" + engine.format_all())
    return module


def clear_caches() -> None:
    from solar.ir.analysis import isl_model

    isl_model.clear_caches()  # parsed sets and maps, and the models shared by identical kernels


def time_pass(p: Pass, module: ModuleOp) -> float:
    """Seconds of CPU time this process spent in the pass (wall time with `--wall`): CPU time does not grow
    when other processes compete for the cores, so runs on a busy machine stay comparable."""
    engine = DiagnosticEngine()
    clock = time.perf_counter if WALL else time.process_time
    start = clock()
    p.apply(PassContext(engine, report=lambda _: None), module)
    elapsed = clock() - start
    if engine.has_errors:
        raise SystemExit(f"{p.name} failed:\n{engine.format_all()}")
    return elapsed


def stats(ms: list[float]) -> str:
    q = statistics.quantiles(ms, n=10)[-1] if len(ms) > 1 else ms[0]
    return f"median {statistics.median(ms):7.2f} ms   p90 {q:7.2f} ms   mean {statistics.fmean(ms):7.2f} ms"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", type=int, default=600)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cold", action="store_true", help="clear the ISL caches before every kernel")
    ap.add_argument("--profile", action="store_true", help="profile the per-kernel runs (cProfile, top 25)")
    ap.add_argument("--wall", action="store_true", help="wall-clock time instead of this process's CPU time")
    args = ap.parse_args(argv)
    global WALL
    WALL = args.wall
    kernels = generate(args.kernels, args.seed)
    text = "solar.module @bench {\n" + "\n".join(g.text for g in kernels) + "\n}\n"
    module = parse(text)
    assert len(module.funcs) == len(kernels)
    lift_affine, lift_einsum = registry.parse_pipeline("lift-affine,lift-einsum")

    times: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    profiler = cProfile.Profile() if args.profile else None
    if profiler:
        profiler.enable()
    for g, func in zip(kernels, module.funcs, strict=True):
        if args.cold:
            clear_caches()
        alone = ModuleOp(module.name, module.params, [func])
        for p in (lift_affine, lift_einsum):
            ms = 1e3 * time_pass(p, alone)
            times[p.name][g.kind].append(ms)
            times[p.name]["all"].append(ms)
        times["both"]["all"].append(times["lift-affine"]["all"][-1] + times["lift-einsum"]["all"][-1])
        times["both"][g.kind].append(times["both"]["all"][-1])
    if profiler:
        profiler.disable()
    lifted = sum(1 for f in module.funcs for op in f.body if op.attrs.get("kernel") is not None)

    print(f"{len(kernels)} kernels ({', '.join(f'{sum(g.kind == k for g in kernels)} {k}' for k in KINDS)}), "
          f"seed {args.seed}{', cold ISL caches' if args.cold else ''}; {lifted} einsums produced; "
          f"{'wall-clock' if WALL else 'CPU'} time")
    for name in ("lift-affine", "lift-einsum", "both"):
        print(f"{name:12s} per kernel: {stats(times[name]['all'])}")
        for kind in KINDS:
            print(f"  {kind:10s}            {stats(times[name][kind])}")
    fresh = parse(text)
    whole = [time_pass(p, fresh) for p in (lift_affine, lift_einsum)]
    print(f"whole module at once: lift-affine {whole[0]:.2f} s, lift-einsum {whole[1]:.2f} s "
          f"({1e3 * sum(whole) / len(kernels):.2f} ms per kernel)")
    median = statistics.median(times["both"]["all"])
    print(f"target: median ≤ 10 ms per kernel for both passes: {'met' if median <= 10 else 'NOT met'} "
          f"({median:.2f} ms)")
    if profiler:
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
