"""backends/sweep.py and solar.ir.analysis.formula: counts as formulas, evaluated at points and grids.

Every swept number is checked against the cost model run at that point on the module bound there
(`--bind-params` then `--sol`), and every formula against ISL's count at the point."""

from __future__ import annotations

import copy
from pathlib import Path

import islpy as isl
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.backends.cost import CostModel, Peaks
from solar.backends.design_space import explore
from solar.backends.report import analyse
from solar.backends.sweep import CostSurface, SweepError, crossover
from solar.backends.sweep_spec import factors, parse_design_space, parse_sweeps, sizes
from solar.backends.tiling_ir import Tilings, add_cache_aware
from solar.ir.analysis.formula import Formula, NotSymbolic, fmax, fmin, symbols
from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.ops import ModuleOp
from solar.ir.parser import parse_module
from solar.ir.pass_manager import PassContext
from solar.passes.bind_params import BindParams
from solar.passes.fuse import Fuse
from solar.passes.lift_einsum import LiftEinsum
from solar.targets.loader import load_target

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TARGETS = [load_target("h100"), load_target("b200")]

# A causal (triangular) score, a strided window (a 1-D convolution of stride 2) and a reduction, all sized
# by parameters: the formulas have floors and pieces (the output length (N - K) floordiv 2 + 1).
SHAPES = """
solar.module @shapes [N = 64, K = 3, D = 16] {
  solar.func @f(%q: tensor<NxDxf32>, %k: tensor<NxDxf32>, %x: tensor<Nxf32>, %w: tensor<Kxf32>)
      -> (tensor<NxNxf32>, tensor<((N - K) floordiv 2 + 1)xf32>, tensor<Nxf32>) {
    %s = solar.kernel @causal(%q as Q, %k as KK) -> (S: tensor<NxNxf32>) {
      affine.for %i = 0 to N { affine.for %j = 0 to %i + 1 { affine.for %d = 0 to D {
        S[%i, %j] += Q[%i, %d] * KK[%j, %d]
      } } }
    }
    %c = solar.kernel @conv(%x as X, %w as W) -> (C: tensor<((N - K) floordiv 2 + 1)xf32>) {
      affine.for %o = 0 to (N - K) floordiv 2 + 1 { affine.for %r = 0 to K {
        C[%o] += X[2 * %o + %r] * W[%r]
      } }
    }
    %m = solar.kernel @rowmax(%q as Q) -> (M: tensor<Nxf32>) {
      affine.for %i = 0 to N { affine.for %d = 0 to D { M[%i] max= Q[%i, %d] } }
    }
    solar.return %s, %c, %m
  }
}
"""


def prepared(text: str, fuse: bool = True) -> ModuleOp:
    module = parse_module(text, "<test>")
    ctx = PassContext(DiagnosticEngine(), report=lambda _: None)
    LiftEinsum().apply(ctx, module)
    if fuse:
        Fuse().apply(ctx, module)
    return module


def bound_then_costed(module: ModuleOp, point: dict[str, int]) -> dict[tuple[str, str], tuple[int, int, float, str]]:
    """`--bind-params` at the point, then the cost model: what `--sol` prints, per target and mode."""
    bound = copy.deepcopy(module)
    BindParams(options={k: str(v) for k, v in point.items()}).apply(
        PassContext(DiagnosticEngine(), report=lambda _: None), bound)
    model = CostModel(bound)
    out = {}
    for t in TARGETS:
        for mode, r in analyse(model, Peaks(t), None).modes.items():
            out[(t.name, mode)] = (r.flops, r.bytes, r.seconds, r.bound)
    return out


def assert_equal_to_bound(surface: CostSurface, point: dict[str, int]) -> None:
    expected = bound_then_costed(surface.module, point)
    got = {(c.target, c.mode): c for c in surface.at(point)}
    assert set(got) == set(expected)
    for key, (flops, nbytes, seconds, bound) in expected.items():
        c = got[key]
        assert (c.flops, c.bytes, c.bound) == (flops, nbytes, bound), (key, point)
        assert c.seconds == pytest.approx(seconds, rel=1e-12), (key, point)


# ---- formulas ---------------------------------------------------------------------------------------


def isl_count(text: str, values: dict[str, int]) -> int:
    fixed = text
    for k, v in values.items():
        fixed = fixed.replace(f"[{', '.join(values)}] -> ", "")
        fixed = fixed.replace(k, str(v))
    card = isl.Set(fixed).card()
    return int(str(card).strip("{} ") or 0)


DOMAINS = {
    "causal": "[N] -> { E[i, j] : 0 <= j <= i < N }",
    "window": "[N, W] -> { E[i, j] : 0 <= i < N and i - W < j <= i and j >= 0 }",
    "stride": "[N, K] -> { E[o, r] : 0 <= r < K and 0 <= o and 2 * o + K <= N }",
    "reduction": "[N, M] -> { E[i, k] : 0 <= i < N and 0 <= k < M }",
}


@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(sorted(DOMAINS)), a=st.integers(1, 40), b=st.integers(1, 40))
def test_formula_equals_count_at_every_point(kind: str, a: int, b: int) -> None:
    text = DOMAINS[kind]
    names = text[1:text.index("]")].split(", ")
    values = dict(zip(names, (a, b), strict=False))
    f = Formula.from_isl(isl.Set(text).card())
    assert f.evaluate(values) == isl_count(text, values)


def test_pieces_below_the_window_and_stride_changes() -> None:
    """Sizes where the formula changes piece (the window longer than the sequence; a kernel longer than the
    input, where no output exists): every small size, on both sides of the change."""
    window = Formula.from_isl(isl.Set(DOMAINS["window"]).card())
    stride = Formula.from_isl(isl.Set(DOMAINS["stride"]).card())
    for n in range(1, 12):
        for w in range(1, 12):
            assert window.evaluate({"N": n, "W": w}) == isl_count(DOMAINS["window"], {"N": n, "W": w})
            assert stride.evaluate({"N": n, "K": w}) == isl_count(DOMAINS["stride"], {"N": n, "K": w})
    assert window.evaluate({"N": 3, "W": 8}) == 6  # the whole triangle: the window is past the start
    assert stride.evaluate({"N": 2, "K": 3}) == 0  # no output position fits


def test_grid_evaluation_matches_points() -> None:
    f = Formula.from_isl(isl.Set(DOMAINS["window"]).card())
    n, w = np.meshgrid(np.arange(1, 20, dtype=object), np.arange(1, 9, dtype=object), indexing="ij")
    grid = f.evaluate_grid({"N": n, "W": w})
    assert grid.shape == (19, 8)
    assert all(grid[i, j] == f.evaluate({"N": i + 1, "W": j + 1}) for i in range(19) for j in range(8))


def test_arithmetic_is_simplified_and_exact() -> None:
    s = symbols(["B", "S"])
    flops = 2 * s["B"] * s["S"] * 4096 * 4096
    assert str(flops) == "33554432 * B * S"
    assert fmin(flops, 2 * s["S"] * s["B"] * 4096 * 4096) == flops  # equal arguments collapse
    assert str(fmax(s["B"], 3)) == "max(B, 3)"
    huge = (flops * s["B"]).evaluate({"B": 10**6, "S": 10**6})
    assert huge == 33554432 * 10**18  # Python integers: no overflow
    with pytest.raises(NotSymbolic):
        _ = flops < s["B"]


# ---- the surface ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def swiglu() -> CostSurface:
    return CostSurface(prepared((EXAMPLES / "params.sir").read_text()), TARGETS)


@pytest.fixture(scope="module")
def shapes() -> CostSurface:
    return CostSurface(prepared(SHAPES), TARGETS)


def test_surface_formulas(swiglu: CostSurface) -> None:
    assert swiglu.symbolic and swiglu.params == ("S", "D", "FF")
    totals = swiglu.formulas("unfused")
    assert str(totals["flops_tensor"]) == "6 * D * FF * S"
    assert str(totals["flops_vector"]) == "3 * FF * S"


@settings(max_examples=12, deadline=None)
@given(s=st.integers(1, 5000), d=st.integers(1, 3000), ff=st.integers(1, 9000))
def test_swept_point_equals_bind_then_sol(swiglu: CostSurface, s: int, d: int, ff: int) -> None:
    assert_equal_to_bound(swiglu, {"S": s, "D": d, "FF": ff})


@settings(max_examples=12, deadline=None)
@given(n=st.integers(3, 300), k=st.integers(1, 3), d=st.integers(1, 64))
def test_swept_point_equals_bind_then_sol_with_pieces(shapes: CostSurface, n: int, k: int, d: int) -> None:
    assert_equal_to_bound(shapes, {"N": n, "K": k, "D": d})


def test_grid_is_the_points(shapes: CostSurface) -> None:
    sweep = shapes.grid({"N": [4, 8, 16, 64], "D": [1, 32]})
    assert sweep.shape == (4, 2)
    records = sweep.records()
    assert len(records) == 4 * 2 * len(TARGETS) * 3
    one = next(r for r in records if r["point"] == {"N": 16, "K": 3, "D": 32} and r["target"] == "b200"
               and r["mode"] == "fused")
    at = next(c for c in shapes.at({"N": 16, "D": 32}) if c.target == "b200" and c.mode == "fused")
    assert (one["flops"], one["bytes"], one["time_s"]) == (at.flops, at.bytes, at.seconds)


def test_crossover_is_exact(swiglu: CostSurface) -> None:
    found = crossover(swiglu, "S", "h100-sxm", "fused", 1, 4096)
    assert len(found) == 1
    c = found[0]
    assert (c.below, c.above) == ("memory", "tensor")

    def kind(s: int) -> str:
        return next(p.bound for p in swiglu.at({"S": s}) if p.target == "h100-sxm" and p.mode == "fused")

    assert kind(c.value - 1) == "memory" and kind(c.value) == "tensor"


def test_factors_within_a_sweep(swiglu: CostSurface) -> None:
    sweep = swiglu.grid({"S": [1, 4096]})
    factors = sweep.factors(2e-3)["h100-sxm"]["fused"]["both_factor"]
    seconds = sweep.arrays["h100-sxm"]["fused"].seconds
    assert list(factors) == pytest.approx(list(seconds / 2e-3))


@pytest.mark.parametrize(("axes", "message"), [
    ({"X": [1]}, "no size parameter X"),
    ({"S": []}, "range of S is empty"),
    ({"S": [0]}, "positive integer"),
    ({"S": [2.5]}, "positive integer"),
    ({"S": list(range(1, 1001)), "D": list(range(1, 1001)), "FF": [1, 2]}, "narrow a range"),
])
def test_bad_grids(swiglu: CostSurface, axes: dict, message: str) -> None:
    with pytest.raises(SweepError, match=message):
        swiglu.grid(axes)


def test_cache_aware_points_are_cached_by_size() -> None:
    surface = CostSurface(prepared((EXAMPLES / "mlp.sir").read_text()), TARGETS[:1], buffer="l2")
    first = surface.grid({"B": [8, 64]})
    assert len(surface._tiled) == 2
    again = surface.grid({"B": [64]})
    assert len(surface._tiled) == 2  # a point met before is not solved again
    ca = first.arrays["h100-sxm"]["cache_aware"]
    fused = first.arrays["h100-sxm"]["fused"]
    assert all(fused.bytes[k] <= ca.bytes[k] for k in range(2))
    assert again.arrays["h100-sxm"]["cache_aware"].bytes[0] == ca.bytes[1]


# ---- specs and the design space --------------------------------------------------------------------


def test_size_specs() -> None:
    assert sizes("1,2,4..6", "B") == [1, 2, 4, 5, 6]
    assert sizes("512..4096*2", "C") == [512, 1024, 2048, 4096]
    assert sizes("128..512+128,256", "S") == [128, 256, 384, 512]
    assert factors("0.5..8x", "bandwidth") == [0.5, 1.0, 2.0, 4.0, 8.0]
    assert factors("1..4x*1.5,3", "compute") == pytest.approx([1.0, 1.5, 2.25, 3.0, 3.375])
    space = parse_design_space("bandwidth=1,2x,compute=0.5..2x")
    assert (space.bandwidth, space.compute, space.l2) == ([1.0, 2.0], [0.5, 1.0, 2.0], None)


@pytest.mark.parametrize(("spec", "message"), [
    ("S=", "empty item"), ("S=4..1", "is empty"), ("S=2..8*1", "at least 2"), ("S=0", "not a positive size"),
    ("S=x", "not an integer"), ("=4", "NAME=VALUES"),
])
def test_bad_size_specs(spec: str, message: str) -> None:
    with pytest.raises(SweepError, match=message):
        parse_sweeps([spec])


@pytest.mark.parametrize(("spec", "message"), [
    ("bandwidth=-1x", "positive"), ("bandwidth=0..2x", "positive"), ("speed=2x", "unknown design-space axis"),
    ("bandwidth=2..1x", "is empty"), ("compute=1..4x*1", "above 1"),
])
def test_bad_design_specs(spec: str, message: str) -> None:
    with pytest.raises(SweepError, match=message):
        parse_design_space(spec)


def test_design_space_front_is_the_least_scaling(swiglu: CostSurface) -> None:
    """Every front point meets the latency, every meeting point is at least one front point on both axes,
    and the times are the scaled roofline Σ max(compute_i / c, memory_i / b) of the units."""
    space = parse_design_space("bandwidth=0.25..8x,compute=0.25..8x")
    designs = {(d.target, d.mode): d for d in explore(swiglu, swiglu.point({}), 40e-6, space)}
    d = designs[("h100-sxm", "unfused")]
    a = swiglu.grid({}).arrays["h100-sxm"]["unfused"]
    for i, b in enumerate(d.bandwidth):
        for j, c in enumerate(d.compute):
            expected = sum(max(ci / c, mi / b) for ci, mi in zip(a.unit_compute, a.unit_memory, strict=True))
            assert d.seconds[i, j, 0] == pytest.approx(float(expected))
            meets = d.seconds[i, j, 0] <= 40e-6
            assert meets == any(f["bandwidth"] <= b and f["compute"] <= c for f in d.front)
    assert d.front and all(f["time_s"] <= 40e-6 for f in d.front)
    # Fused at S = 4096: 71.6 µs tensor-bound and 34.1 MB of traffic (10.2 µs at 3.35 TB/s). ×2 compute gives
    # 35.8 µs; ×0.25 bandwidth would make memory 40.7 µs > 40 µs, ×0.5 makes it 20.4 µs.
    fused = designs[("h100-sxm", "fused")].front
    assert [(f["bandwidth"], f["compute"]) for f in fused] == [(0.5, 2.0)]


def test_cache_aware_point_equals_tile_search_then_sol() -> None:
    """The swept cache-aware mode at a point is --bind-params, --tile-search and --sol's cache-aware mode."""
    module = prepared((EXAMPLES / "mlp.sir").read_text())
    surface = CostSurface(module, TARGETS[:1], buffer="l2")
    for b in (4, 256):
        bound = copy.deepcopy(module)
        BindParams(options={"B": str(b)}).apply(PassContext(DiagnosticEngine(), report=lambda _: None), bound)
        model = CostModel(bound)
        report = analyse(model, Peaks(TARGETS[0]), None)
        assert add_cache_aware(report, model, "l2", Tilings(bound)) is None
        expected = report.cache_aware.mode
        got = next(c for c in surface.at({"B": b}) if c.mode == "cache_aware")
        assert (got.flops, got.bytes) == (expected.flops, expected.bytes)
        assert got.seconds == pytest.approx(expected.seconds, rel=1e-12)


SORTED = """
solar.module @s [N = 64] {
  solar.func @f(%x: tensor<4xNxf32>) -> tensor<4xNxf32> {
    %v, %i = solar.sort %x {axis = 1, descending = false} : (tensor<4xNxf32>, tensor<4xNxi64>)
    solar.return %v
  }
}
"""


def test_counts_without_closed_form_are_counted_per_point() -> None:
    """A sort's ⌈log₂ n!⌉ comparisons have no quasi-polynomial: the surface counts at each point, exactly."""
    surface = CostSurface(prepared(SORTED), TARGETS)
    assert not surface.symbolic and "needs a point" in (surface.per_point_reason or "")
    for n in (2, 3, 17, 64):
        assert_equal_to_bound(surface, {"N": n})
