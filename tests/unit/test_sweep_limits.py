"""The limits of sweeps and design spaces (issue 36): sizes past 64 bits and ends too large for a float are one
error, design spaces are capped like grids, a cache-aware grid past 10^3 points asks for --max-points, a
latency needs a unit, parts of --design-space that would do nothing are errors; the Pareto front is a sort
(checked against the quadratic definition), and the report is written a chunk of records at a time."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_sweep import EXAMPLES, prepared

from solar.backends import sweep_report
from solar.backends.design_space import Design, minimal_points, pareto_front
from solar.backends.html_svg import CURVE_POINTS, curves_svg, drawn_indices
from solar.backends.sweep import CostSurface, SweepError
from solar.backends.sweep_report import run_sweep, sweep_json, write_sweep_report
from solar.backends.sweep_spec import (
    CACHE_AWARE_POINTS,
    MAX_POINTS,
    check_axes,
    check_design,
    parse_design_space,
    parse_sweeps,
    sizes,
)
from solar.ir.limits import INT_MAX
from solar.passes.sol import parse_latency
from solar.targets.loader import load_target


@pytest.mark.parametrize(("spec", "message"), [
    (f"S=1..{9 * 10 ** 400}*2", r"S: 9{1}0{19}\.\.\.\(401 digits\) is out of range: a size must fit in 64 bits"),
    (f"S={2 ** 63}", r"at most 2\^63 - 1 = 9223372036854775807"),
    (f"S=1..{2 ** 63}+{2 ** 62}", "out of range"),
    (f"S=1..8*{10 ** 30}", "out of range"),
    ("S=" + "9" * 5000, r"\(5000 digits\) is out of range"),
])
def test_sizes_past_64_bits_are_refused(spec: str, message: str) -> None:
    with pytest.raises(SweepError, match=message):
        parse_sweeps([spec])


def test_ranges_near_2_to_the_63_count_exactly() -> None:
    assert sizes(f"{INT_MAX}", "S") == [INT_MAX]
    assert sizes(f"{2 ** 62}..{INT_MAX}*2", "S") == [2 ** 62]
    assert sizes(f"1..{INT_MAX}*2", "S") == [2 ** k for k in range(63)]
    assert sizes(f"1..{2 ** 40}*{2 ** 20}", "S") == [1, 2 ** 20, 2 ** 40]
    with pytest.raises(SweepError, match="over 1,000,000 values"):
        sizes(f"1..{INT_MAX}", "S")


@pytest.mark.parametrize(("spec", "message"), [
    ("bandwidth=1..1e400x", "bandwidth: the factor 1e400x is too large for a float"),
    ("compute=" + "9" * 400, r"compute: the factor 9{20}\.\.\.\(400 digits\) is too large"),
    ("bandwidth=1..2x,bandwidth=4x", "the design-space axis bandwidth is given twice"),
    ("compute=1x,l2=2x,compute=2x", "axis compute is given twice"),
    ("", "an empty --design-space"),
    ("  ", "an empty --design-space"),
    ("bandwidth=", "'' is not a number"),
    ("bandwidth=0.001..1000x*1.01,compute=0.001..1000x*1.01", "1,929,321 scalings, over 1,000,000"),
])
def test_bad_design_spaces(spec: str, message: str) -> None:
    with pytest.raises(SweepError, match=message):
        parse_design_space(spec)


def test_design_space_limits() -> None:
    assert parse_design_space("bandwidth=0.001..1000x*1.015,compute=0.001..1000x*1.015").scalings == 928 ** 2
    with pytest.raises(SweepError, match="l2 scales the cache-aware mode's buffer: run --tile-search"):
        check_design(parse_design_space("bandwidth=1x,l2=1..2x"), cache_aware=False)
    check_design(parse_design_space("l2=1..2x"), cache_aware=True)
    many_l2 = parse_design_space("l2=1..1e4x*1.005")
    assert len(many_l2.l2 or []) > CACHE_AWARE_POINTS
    with pytest.raises(SweepError, match=r"l2 has 1,8\d\d factors, over 1,000 .* --max-points=18\d\d"):
        check_design(many_l2, cache_aware=True)
    check_design(many_l2, cache_aware=True, max_points=2000)


def test_cache_aware_grids_ask_for_max_points() -> None:
    axes = {"B": list(range(1, 1002))}
    check_axes(["B"], axes)
    with pytest.raises(SweepError, match=r"1,001 points, over 1,000 for the cache-aware mode .* "
                                         r"give --max-points=1001"):
        check_axes(["B"], axes, cache_aware=True)
    check_axes(["B"], axes, cache_aware=True, max_points=1001)
    with pytest.raises(SweepError, match="over --max-points=1000"):
        check_axes(["B"], axes, cache_aware=True, max_points=1000)
    with pytest.raises(SweepError, match="from 1 to 1,000,000, not 1,000,001"):
        check_axes(["B"], axes, max_points=MAX_POINTS + 1)
    # A surface keeps to its own limit before any tiling search (the --sol pass sets it from --max-points).
    surface = CostSurface(prepared((EXAMPLES / "mlp.sir").read_text()), [load_target("h100")], buffer="l2",
                          max_points=1000)
    with pytest.raises(SweepError, match="1,001 points, over --max-points=1000"):
        surface.grid(axes)


@pytest.mark.parametrize(("text", "message"), [
    ("2", "bad latency '2': give a unit"), ("0.5 ", "give a unit"), ("1e999s", "too large for a float"),
    ("1e400ms", "too large for a float"), ("inf", "write a positive number with a unit"),
    ("infs", "write a positive number"), ("nan", "write a positive number"), ("0ms", "positive"),
])
def test_bad_latencies(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_latency(text)


def test_latencies() -> None:
    assert parse_latency("2ms") == 2e-3 and parse_latency("500 us") == pytest.approx(5e-4)
    assert parse_latency("1e-3s") == 1e-3 and parse_latency("3ns") == pytest.approx(3e-9)


# ---- the Pareto front ------------------------------------------------------------------------------------


def brute_force_front(points: list[tuple[float, float, float]]) -> list[int]:
    """The definition: no other point at most on every axis and different."""
    return [n for n, p in enumerate(points)
            if not any(q != p and all(x <= y for x, y in zip(q, p, strict=True)) for q in points)]


axis = st.sampled_from([0.25, 0.5, 1.0, 1.5, 2.0, 4.0])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(axis, axis, axis), max_size=60))
def test_sorted_front_is_the_quadratic_front(points: list[tuple[float, float, float]]) -> None:
    assert sorted(minimal_points(points)) == brute_force_front(points)


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.integers(1, 3), st.integers(0, 2 ** 32 - 1), st.floats(0.1, 0.9),
       st.booleans())
def test_design_front_on_a_grid(nb: int, nc: int, nl: int, seed: int, quantile: float, shuffled: bool) -> None:
    """On a design grid of random times: the front is the meeting scalings that no meeting one dominates
    (axes in order: the prefix count; shuffled: the sort)."""
    rng = np.random.default_rng(seed)
    seconds = rng.random((nb, nc, nl))
    latency = float(np.quantile(seconds, quantile))
    bw, cp, l2 = [0.5 * 2 ** k for k in range(nb)], [0.5 * 2 ** k for k in range(nc)], [2.0 ** k for k in range(nl)]
    if shuffled:
        orders = [rng.permutation(n) for n in (nb, nc, nl)]
        bw, cp, l2 = ([axis[k] for k in order] for axis, order in zip((bw, cp, l2), orders, strict=True))
        seconds = seconds[np.ix_(*orders)]
    design = Design("t", "fused", latency, bw, cp, l2, seconds)
    meets = [(b, c, lv) for (i, b), (j, c), (k, lv) in itertools.product(enumerate(bw), enumerate(cp), enumerate(l2))
             if seconds[i, j, k] <= latency * (1 + 1e-12)]
    expected = sorted(meets[n] for n in brute_force_front(meets))
    front = pareto_front(design)
    assert [(f["bandwidth"], f["compute"], f["l2"]) for f in front] == expected
    assert all(f["time_s"] <= latency * (1 + 1e-12) for f in front)


# ---- the report and the page -----------------------------------------------------------------------------


def test_streamed_report_is_the_document(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Written a chunk at a time (three chunks here, the last one short), the file parses to what `sweep_json`
    builds."""
    monkeypatch.setattr(sweep_report, "RECORD_CHUNK", 50)
    surface = CostSurface(prepared((EXAMPLES / "params.sir").read_text()), [load_target("h100")])
    outcome = run_sweep(surface, {"S": list(range(1, 70)), "D": [64, 128]}, 1e-6)
    assert [len(c) for c in sweep_report.record_chunks(outcome)] == [150, 150, 114]
    path = tmp_path / "s.json"
    path.write_text("keep")
    write_sweep_report(outcome, "swiglu", str(path))
    doc = json.loads(path.read_text())
    assert doc == json.loads(json.dumps(sweep_json(outcome, "swiglu")))
    assert len(doc["records"]) == 69 * 2 * 3
    assert doc["records"][0]["point"] == {"S": 1, "D": 64, "FF": 2816}
    assert [r["mode"] for r in doc["records"][:3]] == ["unfused", "fused", "whole_graph"]
    assert doc["records"][-1]["point"] == {"S": 69, "D": 128, "FF": 2816}


def test_curves_draw_at_most_a_few_thousand_points() -> None:
    n = 100_000
    keep = drawn_indices(n)
    assert len(keep) == CURVE_POINTS and keep[0] == 0 and keep[-1] == n - 1
    assert drawn_indices(10) == list(range(10))
    svg = curves_svg({"name": "h100: SOL against S", "x": "S", "points": list(range(1, n + 1)),
                      "series": {"fused": [1e-6 * (k + 1) for k in range(n)]}})
    assert svg.count(" L") == CURVE_POINTS - 1
    assert "2,000 of 100,000 points drawn" in svg
