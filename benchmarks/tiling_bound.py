"""The cost of the cache-aware bound per group, before and after issue 25 (run from benchmarks/tiling.py).

Before: the segment bound with every step's segments cut by loads and stores (`io_bound(..., tight=False)`,
the argument as it was). After: the bound the cache-aware mode takes now, the segment bound with the steps
that write results cut by loads and births, and the traffic global dependencies force
(`global_dependency`). Both cold (caches cleared) over the 20 buffer sizes of the curve, in this process;
the time per group and buffer, their ratio, and the bound's bytes at the L2 of an H100 before and after.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from solar.backends import io_bound as segment
from solar.backends.io_bound_global import global_dependency
from solar.backends.tiling_ir import CURVE_BUFFERS
from solar.backends.tiling_problem import EinsumDesc, TilingProblem, build_problem

L2 = 52428800.0  # H100


def _clear() -> None:
    for cached in (segment.io_bound, segment._pieces, segment._relaxations_of, global_dependency):
        cached.cache_clear()


def before(problem: TilingProblem, capacity: float) -> float:
    return segment.io_bound(problem, capacity, tight=False)


def after(problem: TilingProblem, capacity: float, compulsory: float) -> float:
    forced = global_dependency(problem, capacity)
    return max(segment.io_bound(problem, capacity), compulsory + (forced.extra if forced is not None else 0.0))


def gemm_batchnorm(batch: int, k: int, n: int) -> TilingProblem:
    """KernelBench L2 39's pattern: a GEMM, a scale, batch norm in training (f32)."""
    def e(name: str, spec: str, ins: list[tuple[str, tuple[int, ...]]], out: tuple[str, tuple[int, ...]]
          ) -> EinsumDesc:
        return EinsumDesc(name, spec, tuple((t, t.upper(), s, 4) for t, s in ins), (out[0], out[0].upper(), out[1], 4))

    b = batch
    return build_problem(f"gemm+batchnorm {b}x{k}x{n} f32", [
        e("gemm", "bk,nk->bn", [("x", (b, k)), ("w", (n, k))], ("y", (b, n))),
        e("scale", "bn,n->bn", [("y", (b, n)), ("s", (n,))], ("y2", (b, n))),
        e("mean", "bn->n", [("y2", (b, n))], ("m", (n,))),
        e("center", "bn,n->bn", [("y2", (b, n)), ("m", (n,))], ("t", (b, n))),
        e("var", "bn->n", [("t", (b, n))], ("v", (n,))),
        e("norm", "bn,n->bn", [("t", (b, n)), ("v", (n,))], ("z", (b, n)))], lambda t: t == "z")


def compulsory_of(problem: TilingProblem) -> float:
    """Each tensor that lives in DRAM once: the inputs (read by some step, made by none) and the results."""
    made = {s.write.tensor for s in problem.steps}
    names = {a.tensor for s in problem.steps for a in s.reads if a.tensor not in made}
    names |= {t.name for t in problem.tensors if t.name in made and t.external}
    exact = {a.tensor: a.exact for s in problem.steps for a in (*s.reads, s.write)}
    return float(sum(exact[t] * problem.tensor(t).itemsize for t in names))


def _median_cold(fn: Callable[[float], float], clock: Callable[[], float]) -> float:
    per = []
    for c in CURVE_BUFFERS:
        _clear()
        start = clock()
        fn(c)
        per.append(clock() - start)
    return statistics.median(per)


def run_bound(cases: list[tuple[str, Callable[[], TilingProblem]]], clock: Callable[[], float] = time.process_time
              ) -> None:
    print("\nthe cache-aware bound per group, cold, median over the 20 curve buffers (before: loads-and-stores "
          "segments only; after: + births of results, + global dependencies); its bytes (at least the compulsory "
          "traffic) at the L2 of an H100 and at 1 MiB")
    print(f"{'group':<42}{'before':>11}{'after':>11}{'ratio':>7}{'L2 before':>14}{'after':>12}"
          f"{'1 MiB before':>14}{'after':>12}")
    for label, make in cases:
        problem = make()
        compulsory = compulsory_of(problem)
        t_before = _median_cold(lambda c, p=problem: before(p, c), clock)
        t_after = _median_cold(lambda c, p=problem, q=compulsory: after(p, c, q), clock)
        _clear()
        sizes = [x / 1e6 for c in (L2, 1048576.0)
                 for x in (max(before(problem, c), compulsory), after(problem, c, compulsory))]
        print(f"{label:<42}{t_before * 1e3:>8.2f} ms{t_after * 1e3:>8.2f} ms{t_after / max(t_before, 1e-9):>6.2f}×"
              + "".join(f"{x:>9.1f} MB" if k % 2 else f"{x:>11.1f} MB" for k, x in enumerate(sizes)))
