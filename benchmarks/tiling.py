"""Tiling-search speed: the MILP per (einsum, buffer size) and per 20-point curve, beside brute force.

For a matmul, a conv2d and an attention chain (realistic sizes), solves the least-traffic tiling at the 20
buffer sizes of the curve (64 KiB … 256 MiB):
- *per buffer*: each size on a fresh space (formulations built, no earlier solution to start from), the
  median over the 20 sizes and over the sizes that need a MILP (the others are answered by "everything
  fits": the resident mapping moves only the compulsory traffic);
- *curve*: the 20 sizes in order on one space, as `--tile-curve` does (earlier optima seed the incumbent),
  with the median time per point there.
Brute force enumerates the same space (every tile combination, loop order and retention level): at these
sizes it does not finish, so each case also runs scaled down to where it does, and the MILP's time there is
printed beside it as a ratio (brute force ÷ MILP), with a check that both find the same traffic.

Network scale: `--tile-search` (the pass, L2 of an H100) on a whole network, a residual MLP of 24 identical
blocks at GPU sizes (8192 tokens, width 1024, hidden 4096, bf16; 96 einsums), printed as the time per
network beside the baseline measured in the same run: every einsum solved on its own space, as the pass
did before it kept one solution per distinct shape. Then translated PyTorch: nn.MultiheadAttention (4
heads, embed 128) at sequence 16384 beside sequence 1024 (the baseline: the long one must be no slower),
and the transformer and bottleneck blocks of benchmarks/gpu_corpus (each the least of 3 runs, imports paid
before). Target (issue 13): at most 5 s per
network.

    python benchmarks/tiling.py [--wall] [--quick] [--network-only] [--bound-only]

The cache-aware bound's cost per group before and after issue 25 (benchmarks/tiling_bound.py) comes last.

Times are CPU seconds of this process (HiGHS runs in it) unless --wall. Targets (issue 6): a median of at
most 50 ms per (einsum, buffer size) and at most 1 s per 20-point curve.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable

from tiling_bound import gemm_batchnorm, run_bound

from solar.backends.tiling import Space
from solar.backends.tiling_ir import CURVE_BUFFERS
from solar.backends.tiling_problem import EinsumDesc, TilingProblem, build_problem, einsum_problem

CLOCK: Callable[[], float] = time.process_time


def matmul(m: int, k: int, n: int) -> TilingProblem:
    return einsum_problem("ik,kj->ij", [(m, k), (k, n), (m, n)], itemsize=2, name=f"matmul {m}x{k}x{n} bf16")


def conv2d(c: int, hw: int, k: int, name: str = "") -> TilingProblem:
    """A 3×3, stride-2, padding-1 convolution (a ResNet downsampling layer), bf16."""
    out = hw // 2
    where = f"2p+r-1>=0,2p+r-1<{hw},2q+s-1>=0,2q+s-1<{hw}"
    return einsum_problem("nc(2p+r-1)(2q+s-1),kcrs->nkpq", [(1, c, hw, hw), (k, c, 3, 3), (1, k, out, out)],
                          itemsize=2, where=where, name=name or f"conv2d {c}->{k} {hw}x{hw} s2 bf16")


def attention(h: int, s: int, d: int) -> TilingProblem:
    """Causal attention of one layer, fused: QKᵀ, row max, exp, row sum, PV, normalize (f32)."""
    f = 4

    def e(name: str, spec: str, ins: list[tuple[str, tuple[int, ...]]], out: tuple[str, tuple[int, ...]],
          where: str | None = "j<=i") -> EinsumDesc:
        operands = tuple((t, t.upper(), sh, f) for t, sh in ins)
        return EinsumDesc(name, spec, operands, (out[0], out[0].upper(), out[1], f), where)

    return build_problem(f"attention {h}x{s}x{d} f32", [
        e("scores", "hid,hjd->hij", [("q", (h, s, d)), ("k", (h, s, d))], ("s", (h, s, s))),
        e("rowmax", "hij->hi", [("s", (h, s, s))], ("m", (h, s))),
        e("exp", "hij,hi->hij", [("s", (h, s, s)), ("m", (h, s))], ("p", (h, s, s))),
        e("rowsum", "hij->hi", [("p", (h, s, s))], ("l", (h, s))),
        e("pv", "hij,hjd->hid", [("p", (h, s, s)), ("v", (h, s, d))], ("o", (h, s, d))),
        e("normalize", "hid,hi->hid", [("o", (h, s, d)), ("l", (h, s))], ("y", (h, s, d)), None)])


CASES: list[tuple[str, Callable[[], TilingProblem], Callable[[], TilingProblem]]] = [
    ("matmul", lambda: matmul(4096, 4096, 4096), lambda: matmul(48, 32, 64)),
    ("conv2d", lambda: conv2d(64, 56, 128), lambda: conv2d(2, 8, 4, "conv2d 2->4 8x8 s2 bf16")),
    ("attention", lambda: attention(16, 1024, 64), lambda: attention(2, 16, 8)),
]


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = CLOCK()
    out = fn()
    return CLOCK() - start, out


def ms(t: float) -> str:
    return f"{t * 1e3:8.1f} ms"


def run_case(label: str, big: Callable[[], TilingProblem], small: Callable[[], TilingProblem],
             quick: bool) -> dict[str, float]:
    problem = big()
    print(f"\n== {label}: {problem.name}")
    buffers = CURVE_BUFFERS[::4] if quick else CURVE_BUFFERS
    per: list[float] = []
    needed: list[float] = []
    for c in buffers:
        space = Space(problem)
        t, m = timed(lambda space=space, c=c: space.solve(c))
        per.append(t)
        if space.resident(c) is None:
            needed.append(t)
        traffic = getattr(m, "traffic", None)
        ratio = "no fit" if traffic is None else f"{traffic / space.compulsory:7.3f}× compulsory"
        print(f"   buffer {c / 1024:>9.0f} KiB  {ms(t)}  {ratio}")
    space = Space(problem)
    points = [timed(lambda c=c: space.solve(c))[0] for c in CURVE_BUFFERS]
    curve_t = sum(points)
    median = statistics.median(per)
    median_milp = statistics.median(needed) if needed else 0.0
    print(f"   per (einsum, buffer), cold: median {ms(median)}; over the {len(needed)} sizes needing a MILP: "
          f"median {ms(median_milp)}, max {ms(max(needed, default=0.0))}")
    print(f"   20-point curve on one space: {ms(curve_t)} (per point: median {ms(statistics.median(points))}, "
          f"max {ms(max(points))})")
    # Scaled down, brute force finishes: same optimum, and how much faster the MILP is.
    small_problem = small()
    sspace = Space(small_problem)
    capacities = [max(64, int(sspace.compulsory * f)) for f in (0.05, 0.15, 0.4, 0.8)]
    ratios = []
    for c in capacities:
        t_bf, bf = timed(lambda c=c: Space(small_problem).brute_force(c))
        t_milp, mi = timed(lambda c=c: Space(small_problem).solve(c))
        same = (bf is None and mi is None) or (bf is not None and mi is not None
                                               and math.isclose(bf.traffic, mi.traffic, rel_tol=1e-6))
        ratios.append(t_bf / max(t_milp, 1e-9))
        print(f"   {small_problem.name}, buffer {c:>6} B: brute force {ms(t_bf)}, MILP {ms(t_milp)}, "
              f"ratio {ratios[-1]:7.1f}×, same optimum: {same}")
    return {"median": median, "median_milp": median_milp, "curve": curve_t,
            "warm": statistics.median(points), "ratio": statistics.median(ratios)}


def network_sir(blocks: int, tokens: int, width: int, hidden: int, dtype: str = "bf16") -> str:
    """A residual MLP of identical blocks, as einsums (what --lift-einsum gives for a translated network)."""
    th, tw = f"tensor<{tokens}x{hidden}x{dtype}>", f"tensor<{tokens}x{width}x{dtype}>"
    args, body, x = [f"%x: {tw}"], [], "%x"
    for b in range(blocks):
        args += [f"%u{b}: tensor<{hidden}x{width}x{dtype}>", f"%v{b}: tensor<{width}x{hidden}x{dtype}>"]
        body += [f'    %h{b} = solar.einsum @up{b} "ik,jk->ij" ({x} as X, %u{b} as W) -> (H: {th}) {{ H += X * W }}',
                 f'    %r{b} = solar.einsum @relu{b} "ij->ij" (%h{b} as H) -> (R: {th}) {{ R = max(H, 0.0) }}',
                 f'    %d{b} = solar.einsum @down{b} "ik,jk->ij" (%r{b} as R, %v{b} as W) -> (D: {tw}) {{ D += R*W }}',
                 f'    %x{b} = solar.einsum @add{b} "ij,ij->ij" ({x} as X, %d{b} as D) -> (Y: {tw}) {{ Y = X + D }}']
        x = f"%x{b}"
    return (f"solar.module @net {{\n  solar.func @forward({', '.join(args)}) -> {tw} {{\n" + "\n".join(body)
            + f"\n    solar.return {x}\n  }}\n}}\n")


def run_network(blocks: int) -> tuple[float, float, int]:
    """(the pass on the network, the per-einsum baseline, einsums) in seconds of CLOCK."""
    from solar.backends.tiling_ir import IRChains, resolve_buffer, space_of
    from solar.ir import parse_and_verify
    from solar.ir.diagnostics import DiagnosticEngine
    from solar.ir.ops import EinsumOp
    from solar.ir.pass_manager import PassContext, PassManager
    from solar.passes import registry
    from solar.targets.loader import load_target

    text = network_sir(blocks, 8192, 1024, 4096)
    module = parse_and_verify(text)
    start = CLOCK()
    PassManager(registry.parse_pipeline("tile-search{buffer=l2 target=h100}")).run(
        module, PassContext(DiagnosticEngine(), report=lambda _: None))
    network = CLOCK() - start
    module = parse_and_verify(text)
    capacity = resolve_buffer("l2", load_target("h100"))
    func = module.funcs[0]
    einsums = [op for op in func.walk() if isinstance(op, EinsumOp)]
    start = CLOCK()
    chains = IRChains(func, {})
    for op in einsums:
        descs, needed = chains.piece([op])
        space_of(build_problem(op.symbol, descs, lambda t, n=needed: t in n)).solve(capacity)
    baseline = CLOCK() - start
    return network, baseline, len(einsums)


def tile_search_time(module: object, repeat: int = 3) -> float:
    """CLOCK seconds of `--tile-search` (L2 of an H100) on a module after `--lift-einsum`: the least of
    `repeat` runs, each on a fresh copy and a fresh pass (sub-second figures on a shared machine)."""
    import copy

    from solar.ir.diagnostics import DiagnosticEngine
    from solar.ir.pass_manager import PassContext, PassManager
    from solar.passes import registry

    ctx = PassContext(DiagnosticEngine(), report=lambda _: None)
    lifted = PassManager(registry.parse_pipeline("lift-einsum")).run(module, ctx)
    times = []
    for _ in range(repeat):
        fresh = copy.deepcopy(lifted)
        start = CLOCK()
        PassManager(registry.parse_pipeline("tile-search{buffer=l2 target=h100}")).run(
            fresh, PassContext(DiagnosticEngine(), report=lambda _: None))
        times.append(CLOCK() - start)
    return min(times)


def run_translated() -> None:
    """`--tile-search` on translated PyTorch: nn.MultiheadAttention (4 heads, embed 128) at sequence 1024
    and 16384 (the baseline is the short one: tile counts come from the model, so the long one must be no
    slower), and the network blocks of benchmarks/gpu_corpus."""
    import os

    import torch

    from solar.frontends.torch_export import callable_problem, load_problem, translate_problem

    class MHA(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = torch.nn.MultiheadAttention(128, 4, batch_first=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.attn(x, x, x, need_weights=False)[0]

    times = {}
    for seq in (1024, 16384):
        problem = callable_problem(MHA().eval(), [torch.randn(1, seq, 128)], f"mha_{seq}")
        times[seq] = tile_search_time(translate_problem(problem, "none").module)
    print(f"attention: nn.MultiheadAttention, 4 heads, embed 128: --tile-search seq 16384 {times[16384]:.2f} s; "
          f"baseline seq 1024 {times[1024]:.2f} s; ratio {times[16384] / max(times[1024], 1e-9):.2f}x "
          "(target: no slower)")
    corpus = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu_corpus")
    for name in ("attention_block", "bottleneck_block"):
        t = tile_search_time(translate_problem(load_problem(os.path.join(corpus, name + ".py")), "all").module)
        print(f"network block: gpu_corpus/{name}: --tile-search {t:.2f} s per network (target <= 5 s)")


def main() -> None:
    global CLOCK
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--wall", action="store_true", help="wall-clock time instead of CPU time")
    parser.add_argument("--quick", action="store_true", help="5 buffer sizes per case instead of 20")
    parser.add_argument("--network-only", action="store_true", help="only the network-scale case")
    parser.add_argument("--bound-only", action="store_true", help="only the cache-aware bound's cost per group")
    args = parser.parse_args()
    if args.wall:
        CLOCK = time.perf_counter
    bound_cases = [*[(label, big) for label, big, _ in CASES],
                   ("gemm+batchnorm 16384x4096x4096 (L2 39)", lambda: gemm_batchnorm(16384, 4096, 4096))]
    if args.bound_only:
        run_bound(bound_cases, CLOCK)
        return
    network, baseline, count = run_network(24)
    print(f"network: residual MLP, 24 blocks, {count} einsums at GPU sizes: --tile-search {network:.2f} s per network "
          f"(target <= 5 s); baseline, each einsum on its own space: {baseline:.2f} s; "
          f"{baseline / max(network, 1e-9):.1f}x faster")
    run_translated()
    if args.network_only:
        return
    results = {label: run_case(label, big, small, args.quick) for label, big, small in CASES}
    print("\nsummary (target: median ≤ 50 ms per (einsum, buffer), ≤ 1 s per 20-point curve)")
    print(f"{'case':<11}{'cold median':>13}{'cold, MILP':>13}{'in a curve':>13}{'curve':>10}{'brute/MILP':>12}")
    for label, r in results.items():
        ok = "ok" if r["median"] <= 0.05 and r["curve"] <= 1.0 else "over target"
        print(f"{label:<11}{r['median'] * 1e3:>10.1f} ms{r['median_milp'] * 1e3:>10.1f} ms{r['warm'] * 1e3:>10.1f} ms"
              f"{r['curve']:>8.2f} s{r['ratio']:>11.1f}×  {ok}")
    run_bound(bound_cases, CLOCK)


if __name__ == "__main__":
    main()
