"""The segment bound (backends/io_bound.py; docs/design/tiling.md, "The segment bound"): its closed form on
a large matmul, that no partition of an einsum into boxes has fewer pieces than it claims, and that it never
increases with the buffer."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_tiling import CASES

from solar.backends.io_bound import io_bound, segments
from solar.backends.tiling import Space
from solar.backends.tiling_ir import lower_bound
from solar.backends.tiling_problem import EinsumDesc, TilingProblem, build_problem, einsum_problem


def test_matmul_closed_form() -> None:
    """A matmul's result is written out, so its segments are cut by loads and births of result elements
    (each birth is paid for by the element's store): a segment touches at most X = C + R + b bytes and runs
    at most (X/12)^1.5 points (f32); R = 2C gives the tight 2·MNK/√S − 2S of Smith et al. (S = C/4
    elements; up to one segment more where the count of segments rounds up), above the loads-and-stores
    argument's √2·MNK/√S and below the MILP's best tiling (a schedule that runs)."""
    n, capacity = 1024, float(1 << 20)
    problem = einsum_problem("ik,kj->ij", [(n, n), (n, n), (n, n)])
    s = capacity / 4
    closed = (2 * n**3 / math.sqrt(s) - 2 * s) * 4
    bound = io_bound(problem, capacity)
    assert 0.99 * closed <= bound <= closed + 2 * capacity  # at most one segment more (the ceiling of K)
    assert io_bound(problem, capacity, tight=False) <= 0.75 * bound  # the √2 of the older argument
    best = Space(problem).solve(capacity)
    assert best is not None and bound <= best.traffic
    assert io_bound(problem, 12 * float(n * n) * 4) == 0.0  # a buffer that holds everything: no bound


def test_batched_matmul_closed_form() -> None:
    """A bmm: the batch index is covered twice by the weights (1/2, 1/2, 1/2), so the same bound holds with
    MNK summed over the batch: 2·B·MNK/√S − 2S."""
    b, n, capacity = 8, 512, float(1 << 18)
    problem = einsum_problem("bik,bkj->bij", [(b, n, n), (b, n, n), (b, n, n)])
    s = capacity / 4
    closed = (2 * b * n**3 / math.sqrt(s) - 2 * s) * 4
    assert 0.99 * closed <= io_bound(problem, capacity) <= closed + 2 * capacity


SINGLE = [(name, make) for name, make in CASES if len(make().steps) == 1]


@pytest.mark.parametrize(("name", "make"), SINGLE, ids=[n for n, _ in SINGLE])
def test_no_partition_into_boxes_beats_the_segment_count(name: str, make: object) -> None:
    """Every tiling of the iteration space into boxes of one shape is a partition whose pieces each touch at
    most the box's footprint in the DRAM tensors: it has at least `segments` pieces for that budget."""
    problem = make()  # type: ignore[operator]
    space = Space(problem)
    step = problem.steps[0]
    extent = problem.extent
    accesses = [*{a.tensor: a for a in step.reads}.values(), step.write]
    boxes = list(itertools.product(*(sorted({1, 2, 3, n // 2 or 1, n}) for n in (extent[u] for u in step.indices))))
    footprints, pieces = [], []
    for tiles in boxes:
        span = dict(extent) | dict(zip(step.indices, tiles, strict=True))
        footprints.append(sum(space.footprint(a.dims, span) * problem.tensor(a.tensor).itemsize for a in accesses))
        pieces.append(math.prod(-(-extent[u] // t) for u, t in zip(step.indices, tiles, strict=True)))
    least = segments(problem, np.array(footprints, dtype=float))
    bad = [(b, f, k, p) for b, f, k, p in zip(boxes, footprints, least, pieces, strict=True) if k > p]
    assert not bad and len(boxes) > 1


@settings(max_examples=30, deadline=None)
@given(case=st.sampled_from([n for n, _ in CASES]), low=st.floats(16.0, 4096.0), ratio=st.floats(1.0, 8.0))
def test_the_bound_never_increases_with_the_buffer(case: str, low: float, ratio: float) -> None:
    problem = dict(CASES)[case]()
    assert io_bound(problem, low * ratio) <= io_bound(problem, low)


def test_lower_bound_is_the_floor_at_least_the_fused_bytes() -> None:
    assert lower_bound(100.0, 250.0) == 250.0  # the traffic every schedule moves
    assert lower_bound(100.0, 50.0) == 100.0  # never below the fused bytes
    assert lower_bound(100.0, 450.0) == 450.0  # above the unfused bytes where the buffer forces it
    assert lower_bound(100.0, None) == 100.0  # not a tiling problem: its fused bytes


def attention_chain(heads: int, n: int, d: int) -> TilingProblem:
    """Exact attention of one layer, fused (f32): scores, row max, exponentials, row sum, PV, normalise."""
    def e(name: str, spec: str, ins: list[tuple[str, tuple[int, ...]]], out: tuple[str, tuple[int, ...]]
          ) -> EinsumDesc:
        return EinsumDesc(name, spec, tuple((t, t.upper(), s, 4) for t, s in ins), (out[0], out[0].upper(), out[1], 4))

    h, s = heads, n
    return build_problem("attention", [
        e("scores", "hid,hjd->hij", [("q", (h, s, d)), ("k", (h, s, d))], ("s", (h, s, s))),
        e("rowmax", "hij->hi", [("s", (h, s, s))], ("m", (h, s))),
        e("exp", "hij,hi->hij", [("s", (h, s, s)), ("m", (h, s))], ("p", (h, s, s))),
        e("rowsum", "hij->hi", [("p", (h, s, s))], ("l", (h, s))),
        e("pv", "hij,hjd->hid", [("p", (h, s, s)), ("v", (h, s, d))], ("o", (h, s, d))),
        e("normalize", "hid,hi->hid", [("o", (h, s, d)), ("l", (h, s))], ("y", (h, s, d)))])


@pytest.mark.parametrize(("heads", "n", "d"), [(1, 4096, 64), (4, 2048, 128)])
def test_attention_flash_regime(heads: int, n: int, d: int) -> None:
    """With a buffer smaller than a head's keys and values, the segment bound of the fused chain is the
    FlashAttention-style I/O bound: the score points whose score is completed in a segment form whole d-fibres
    over row × column pairs, at most (X/2bd)² of them (docs/design/tiling.md, "Attention"), so the traffic is at least
    about H·N²d²/(2S) elements (S = C/b); the other points' relaxation takes some of it back (55–90 % kept).
    It grows as 1/C, far above the compulsory traffic."""
    problem = attention_chain(heads, n, d)
    compulsory = 4 * heads * n * d * 4
    for capacity in (16384.0, 65536.0):
        flash = heads * n * n * d * d / (2 * capacity / 4) * 4
        bound = io_bound(problem, capacity)
        assert 0.55 * flash <= bound <= flash and bound > 1.4 * compulsory
    assert 3.0 <= io_bound(problem, 16384.0) / io_bound(problem, 65536.0) <= 4.5


def test_convolution_credits_the_window_reuse() -> None:
    """A ResNet-50 stage-4 conv (32 × 256 × 14 × 14, 3 × 3, 256 filters, padding 1, f32): x joined to the
    filter offsets (r, s) is a coordinate projection, so a segment runs at most √(R·S)·(X/3b)^{3/2} points
    and, with births, the traffic is at least 2·points/(√(R·S)·√S) − 2S elements (S = C/b): 34.4 MB on
    256 KiB, 2.3× the compulsory 15.2 MB (slicing the window instead gave 11.6 MB, below it)."""
    n, c, k, hw = 32, 256, 256, 14
    problem = einsum_problem("nc(p+r-1)(q+s-1),kcrs->nkpq", [(n, c, hw, hw), (k, c, 3, 3), (n, k, hw, hw)], 4,
                             f"p+r-1>=0,p+r-1<{hw},q+s-1>=0,q+s-1<{hw}", "conv")
    compulsory = 4 * (n * c * hw * hw + k * c * 9 + n * k * hw * hw)
    points = n * k * c * (3 * hw - 2) ** 2  # the in-bounds taps: 40 of 42 per output row, per axis
    capacity = 256 * 1024.0
    s = capacity / 4
    closed = 4 * (2 * points / (3 * math.sqrt(s)) - 2 * s)
    bound = io_bound(problem, capacity)
    assert closed <= bound <= 1.05 * closed and bound > 2.25 * compulsory
    assert compulsory < io_bound(problem, 1048576.0) < bound
