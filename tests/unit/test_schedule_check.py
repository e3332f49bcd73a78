"""The schedule check (docs/design/bound-checks.md): explicit tiled schedules of every einsum and
group shape of the tiling corpus (test_tiling.CASES) run as access traces on a fully associative buffer under
Belady's policy (schedules.py). The cache-aware bound, as the SOL mode takes it (`tiling_ir.lower_bound`: the
least of the whole-group tiling and the einsums tiled one by one, down to the segment bound `io_bound` and
never below the compulsory traffic), must never exceed the least DRAM traffic among the schedules that run in
the buffer: the MILP's own tiling, simple fused schedules at several tile sizes (every einsum in one loop over
output tiles; a reduction's readers keep its rows whole), and the kernels one by one. Where the model is exact
(one einsum, the tiling it picked), the replay of that tiling in a buffer of its peak moves what the model
says, within TOLERANCE.

The tiling space's least alone would not pass: it moves whole slabs, while a buffer with room to spare keeps
part of the last slab across a reload (replays up to 23 % below it at buffers of a few dozen elements,
`test_the_tiling_space_alone_is_beaten` keeps that case); the segment bound holds for every schedule."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from schedules import Chain, least_replay, mapping_schedule
from test_tiling import CASES, DESCS, d

from solar.backends.io_bound import io_bound
from solar.backends.io_bound_global import global_dependency
from solar.backends.tiling import Space
from solar.backends.tiling_ir import lower_bound
from solar.backends.tiling_problem import EinsumDesc, build_problem

# The replay of the MILP's tiling of one einsum, in a buffer of that tiling's peak, against the model's
# traffic for it: the model charges every slab load exactly and Belady keeps what the tiling retains; the
# margin is what the buffer's room in phases below the peak keeps across tiles (seen: 1.4 %).
TOLERANCE = 0.02


def cache_aware_bound(descs: list[EinsumDesc], capacity: float) -> tuple[float, Space, object, float]:
    """What the cache-aware SOL mode prices the group at (`lower_bound`): the least of its whole-group tiling
    and its einsums tiled one by one, down to the segment bound; the whole-group mapping for the schedule
    of the MILP, and the tiling space's least alone."""
    problem = build_problem("g", descs)
    space = Space(problem)
    whole = space.solve_lower(capacity)
    assert whole is not None
    einsums = [build_problem(x.name, [x]) for x in descs]
    per_einsum = sum(Space(p).solve_lower(capacity).traffic  # type: ignore[union-attr]
                     for p in einsums) if len(descs) > 1 else math.inf
    tiled = min(whole.traffic, per_einsum)
    forced = global_dependency(problem, capacity)
    bound = lower_bound(space.compulsory, io_bound(problem, capacity), forced.extra if forced is not None else 0.0)
    return bound, space, whole, tiled


def check(descs: list[EinsumDesc], capacity: float) -> tuple[float, float, float]:
    """(bound, least replay, the tiling space's least) at one buffer size; asserts bound ≤ least replay."""
    chain = Chain(descs)
    bound, space, whole, tiled = cache_aware_bound(descs, capacity)
    schedules = chain.simple_schedules()
    if whole.capacity == capacity:  # not the fallback to a larger buffer
        schedules.append(mapping_schedule(chain, whole, space))
    least, name = least_replay(chain, schedules, capacity)
    assert space.compulsory <= bound <= least * (1 + 1e-9), (capacity, bound, least, name)
    return bound, least, tiled


@pytest.mark.parametrize(("name", "make"), CASES, ids=[n for n, _ in CASES])
def test_bound_never_exceeds_a_schedule_that_runs(name: str, make: object) -> None:
    descs = DESCS[name]
    compulsory = Space(build_problem(name, descs)).compulsory
    bound, least, _ = check(descs, compulsory * 1.5)  # the buffer holds the working set: the fused bytes
    assert bound == compulsory <= least
    for fraction in (0.1, 0.3):
        check(descs, max(64.0, compulsory * fraction))


WINDOWED = [n for n, _ in CASES if any(len(x.spec.split("->")[0]) != len(x.spec.split("->")[0].replace("(", ""))
                                      for x in DESCS[n])]


@pytest.mark.parametrize("name", WINDOWED)
def test_windowed_bound_never_exceeds_a_schedule_at_any_buffer(name: str) -> None:
    """Every case with a window (convolutions, pooling, two windows of one tensor), where the segment bound
    joins windows to their filter offsets (io_bound._windows_joined), from 16 B to past the working set in
    steps of 2×."""
    descs = DESCS[name]
    compulsory = Space(build_problem(name, descs)).compulsory
    capacity = 16.0
    while capacity < 1.6 * compulsory:
        check(descs, capacity)
        capacity *= 2.0


def test_the_tiling_space_alone_is_beaten() -> None:
    """Why the segment bound is needed: at 102 B, the attention chain's tiling-space least (1,088 B) is above
    a replay of its own tiling, which keeps part of a slab across reloads; the bound is not."""
    descs = DESCS["attention"]
    bound, least, tiled = check(descs, 102.0)
    assert least < tiled and bound <= least


@pytest.mark.parametrize("shape", [(8, 12, 6), (16, 4, 8), (6, 10, 15)])
def test_matmul_replay_of_the_milp_tiling_agrees_with_the_model(shape: tuple[int, int, int]) -> None:
    m, k, n = shape
    descs = [d("mm", "ik,kj->ij", [("a", (m, k)), ("b", (k, n))], ("c", (m, n)))]
    chain, space = Chain(descs), Space(build_problem("mm", descs))
    for fraction in (0.15, 0.3, 0.6):
        mapping = space.solve(space.compulsory * fraction)
        assert mapping is not None
        replayed = chain.replay(mapping_schedule(chain, mapping, space), mapping.peak)
        assert mapping.traffic * (1 - TOLERANCE) <= replayed <= mapping.traffic * (1 + 1e-9), (fraction, mapping)


def gemm_batchnorm(batch: int, k: int, n: int) -> list[EinsumDesc]:
    """A GEMM, a scale and batch norm in training (statistics over the batch b, used again over it)."""
    return [d("gemm", "bk,nk->bn", [("x", (batch, k)), ("w", (n, k))], ("y", (batch, n))),
            d("scale", "bn,n->bn", [("y", (batch, n)), ("s", (n,))], ("y2", (batch, n))),
            d("mean", "bn->n", [("y2", (batch, n))], ("m", (n,))),
            d("center", "bn,n->bn", [("y2", (batch, n)), ("m", (n,))], ("t", (batch, n))),
            d("var", "bn->n", [("t", (batch, n))], ("v", (n,))),
            d("norm", "bn,n->bn", [("t", (batch, n)), ("v", (n,))], ("z", (batch, n)))]


def layernorm(rows: int, width: int) -> list[EinsumDesc]:
    """A row sum used again over the row (the centring of a layer norm)."""
    return [d("sum", "ij->i", [("x", (rows, width))], ("s", (rows,))),
            d("center", "ij,i->ij", [("x", (rows, width)), ("s", (rows,))], ("y", (rows, width)))]


@pytest.mark.parametrize(("descs", "argument"), [(gemm_batchnorm(8, 6, 6), "first completion"),
                                                 (gemm_batchnorm(12, 4, 8), "first completion"),
                                                 (layernorm(4, 32), "per fibre")], ids=["bn-8x6x6", "bn-12x4x8", "ln"])
def test_global_dependency_bound_never_exceeds_a_schedule(descs: list[EinsumDesc], argument: str) -> None:
    """A reduction used again over a fibre larger than the buffer: the fibre's elements must wait for the
    reduction in the buffer, in DRAM or be recomputed (docs/design/tiling.md, "Global dependencies"). The forced
    traffic lifts the bound above the compulsory traffic and stays under every replay."""
    problem = build_problem("g", descs)
    compulsory = Space(problem).compulsory
    lifted = 0
    for capacity in (32.0, 48.0, 64.0, 96.0, 160.0):
        forced = global_dependency(problem, capacity)
        bound, _, _ = check(descs, capacity)  # asserts bound ≤ the least replay
        if forced is not None:
            assert forced.argument == argument and bound >= compulsory + forced.extra
            lifted += 1
    assert lifted >= 3


SHAPES = {
    "matmul": lambda a, b, c: [d("mm", "ik,kj->ij", [("a", (a, b)), ("b", (b, c))], ("c", (a, c)))],
    "conv-relu-residual": lambda a, b, c: [
        d("conv", "c(p+r-1),kcr->kp", [("x", (a, b + 2)), ("w", (a, a, 3))], ("y", (a, b + 2)),
          f"p+r-1>=0,p+r-1<{b + 2}"),
        d("relu", "kp->kp", [("y", (a, b + 2))], ("z", (a, b + 2))),
        d("res", "kp,kp->kp", [("z", (a, b + 2)), ("x", (a, b + 2))], ("o", (a, b + 2)))],
    "rmsnorm": lambda a, b, c: [d("sq", "ij->ij", [("x", (a, b))], ("t", (a, b))),
                                d("ss", "ij->i", [("t", (a, b))], ("s", (a,))),
                                d("scale", "ij,i->ij", [("x", (a, b)), ("s", (a,))], ("y", (a, b)))],
    "softmax": lambda a, b, c: [d("max", "ij->i", [("x", (a, b))], ("m", (a,))),
                                d("sum", "ij,i->i", [("x", (a, b)), ("m", (a,))], ("s", (a,))),
                                d("norm", "ij,i,i->ij", [("x", (a, b)), ("m", (a,)), ("s", (a,))], ("y", (a, b)))],
    "gemm-batchnorm": lambda a, b, c: gemm_batchnorm(a + 4, b, c),
    "layernorm": lambda a, b, c: layernorm(a, 4 * b),
    "matmul-relu": lambda a, b, c: [d("mm", "ik,kj->ij", [("a", (a, b)), ("b", (b, c))], ("c", (a, c))),
                                    d("relu", "ij->ij", [("c", (a, c))], ("y", (a, c)))],
}


@settings(max_examples=25, deadline=None)
@given(shape=st.sampled_from(sorted(SHAPES)), a=st.integers(2, 7), b=st.integers(2, 7), c=st.integers(2, 7),
       capacity=st.floats(0.03, 2.0))
def test_bound_never_exceeds_a_schedule_on_random_sizes(shape: str, a: int, b: int, c: int,
                                                         capacity: float) -> None:
    """Random sizes, and buffers from 3 % to twice the compulsory traffic (at least 48 B)."""
    descs = SHAPES[shape](a, b, c)
    compulsory = Space(build_problem(shape, descs)).compulsory
    check(descs, max(48.0, compulsory * capacity))
