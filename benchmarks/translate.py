"""Translation and validation time per corpus program, beside the original program's own run time.

    python benchmarks/translate.py                  # every program of tests/frontend_corpus
    python benchmarks/translate.py --pattern conv   # the programs whose file name contains 'conv'
    python benchmarks/translate.py --cold           # a fresh Numba cache directory (compile every kernel)

Columns: translate = export (torch.export / make_jaxpr) + lowering (+ decomposition when needed);
validate = the original at the validation sizes + the IR through the executor (kernel compilation
included, from the disk cache unless --cold); original = one eager run of the original program at full size
(the least of 5, after a warm-up); ratio = (translate + validate) / original. Median and worst are printed last.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "frontend_corpus"))


def _time_original(fn: Any, args: Any, repeat: int = 5) -> float:
    fn(*args)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn(*args)
        if hasattr(out, "block_until_ready"):
            out.block_until_ready()
        times.append(time.perf_counter() - start)
    return min(times)  # the least of the runs: thread wake-ups on a shared 2-core machine add noise


def bench_torch(path: str) -> dict[str, float]:
    import torch

    from solar.frontends.torch_export import load_problem, reference_runner, translate_problem
    from solar.frontends.validate import small_sizes, validate_sized

    problem = load_problem(path)
    # The original runs first: once the executor has run, Numba's worker threads compete with torch's.
    torch.manual_seed(0)
    model = problem.make_model().eval()
    inputs = problem.make_inputs()
    with torch.no_grad():
        original = _time_original(model, inputs)
    start = time.perf_counter()
    tr = translate_problem(problem)
    translate = time.perf_counter() - start
    sizes = small_sizes(tr.module)
    start = time.perf_counter()
    report = validate_sized(tr.module, lambda sz: reference_runner(problem, tr, 0, sz), sizes)
    validate = time.perf_counter() - start
    return {"translate": translate, "validate": validate, "original": original, "ok": float(report.ok)}


def bench_jax(path: str) -> dict[str, float]:
    import jax
    from harness import load_module

    from solar.frontends.jax_export import jax_reference, translate_jax
    from solar.frontends.validate import validate

    mod = load_module(path)
    args = mod.get_inputs()
    fn = jax.jit(mod.forward)

    def run(*a: Any) -> Any:
        return jax.tree_util.tree_map(lambda x: x.block_until_ready(), fn(*a))

    original = _time_original(run, args)
    start = time.perf_counter()
    tr = translate_jax(mod.forward, args, os.path.basename(path)[:-3])
    translate = time.perf_counter() - start
    start = time.perf_counter()
    report = validate(tr.module, jax_reference(mod.forward, args, tr), {})
    validate_s = time.perf_counter() - start
    return {"translate": translate, "validate": validate_s, "original": original, "ok": float(report.ok)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pattern", default="", help="only programs whose path contains this")
    parser.add_argument("--cold", action="store_true", help="compile kernels into a fresh cache directory")
    args = parser.parse_args(argv)
    if args.cold:
        os.environ["SOLAR_CACHE_DIR"] = tempfile.mkdtemp(prefix="solar-bench-")
    import harness

    rows: list[tuple[str, dict[str, float]]] = []
    programs = [(p, bench_torch) for p in harness.torch_programs()] + [(p, bench_jax) for p in harness.jax_programs()]
    print(f"{'program':36s} {'translate':>10s} {'validate':>10s} {'original':>10s} {'ratio':>10s}  ok")
    for path, fn in programs:
        if args.pattern not in path:
            continue
        name = os.path.basename(os.path.dirname(path)) + "/" + os.path.basename(path)
        try:
            r = fn(path)
        except Exception as err:  # a failing program is reported, the rest still run
            print(f"{name:36s} failed: {type(err).__name__}: {str(err).splitlines()[0][:80]}")
            continue
        ratio = (r["translate"] + r["validate"]) / max(r["original"], 1e-9)
        r["ratio"] = ratio
        rows.append((name, r))
        print(f"{name:36s} {r['translate']:9.3f}s {r['validate']:9.3f}s {r['original'] * 1e3:8.3f}ms "
              f"{ratio:9.0f}x  {'yes' if r['ok'] else 'NO'}", flush=True)
    if not rows:
        return 1
    for key in ("translate", "validate", "ratio"):
        values = [r[key] for _, r in rows]
        worst = max(rows, key=lambda row: row[1][key])
        unit = "x" if key == "ratio" else "s"
        print(f"{key:10s} median {statistics.median(values):10.3f}{unit}   worst {worst[1][key]:10.3f}{unit} "
              f"({worst[0]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
