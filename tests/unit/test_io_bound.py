"""The segment bound (backends/io_bound.py; docs/tiling.md, "A bound for every schedule"): its closed form on
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
from solar.backends.tiling_problem import einsum_problem


def test_matmul_closed_form() -> None:
    """For a matmul the best weights are 1/2 each: a segment touching X bytes runs at most (X/12)^1.5 points
    (f32), and segments of R = 4C give 2^1.5 / 2 = √2 · MNK/√C elements: the bound is just below that (the
    budget grid and the last segment), and never above it (that would be a wrong Shearer bound)."""
    n, capacity = 1024, float(1 << 20)
    problem = einsum_problem("ik,kj->ij", [(n, n), (n, n), (n, n)])
    closed = math.sqrt(2) * n**3 / math.sqrt(capacity / 4) * 4
    assert 0.97 * closed <= io_bound(problem, capacity) <= closed
    assert io_bound(problem, 12 * float(n * n) * 4) == 0.0  # a buffer that holds everything: no bound


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


def test_lower_bound_takes_the_tiling_space_down_to_the_segment_bound() -> None:
    assert lower_bound(100.0, 300.0, 400.0, 250.0) == 250.0  # the space's least is above every schedule's floor
    assert lower_bound(100.0, 200.0, 400.0, 250.0) == 200.0  # below it: the space's least stands
    assert lower_bound(100.0, 300.0, 400.0, 50.0) == 100.0  # never below the fused bytes
    assert lower_bound(100.0, 500.0, 400.0, 450.0) == 400.0  # nor above the unfused ones
    assert lower_bound(100.0, None, 400.0, 450.0) == 100.0  # no tiling of the group: its fused bytes
