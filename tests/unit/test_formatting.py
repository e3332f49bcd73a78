"""One formatter for every output (backends/report.py `quantity`, `seconds`): SI prefixes up to E with a space
before the unit, never scientific notation, and the PNGs' labels written by it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solar.backends.report import quantity, seconds

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("value", "unit", "text"), [
    (2.25e15, "FLOP/s", "2.25 PFLOP/s"), (989.4e12, "FLOP/s", "989 TFLOP/s"), (999.7e9, "FLOP/s", "1 TFLOP/s"),
    (3.35e12, "B/s", "3.35 TB/s"), (12_345_678, "B", "12.3 MB"), (4.2e18, "FLOP", "4.2 EFLOP"), (256, "B", "256 B"),
    (67_108_864, "", "67.1M"), (0, "B", "0 B")])
def test_quantity(value: float, unit: str, text: str) -> None:
    assert quantity(value, unit) == text


@pytest.mark.parametrize(("t", "text"), [(1.94e-3, "1.94 ms"), (1e-5, "10 µs"), (2.5e3, "2,500 s"),
                                         (8.19e-9, "8.19 ns")])
def test_seconds(t: float, text: str) -> None:
    assert seconds(t) == text


@given(st.floats(min_value=1e-15, max_value=1e24, allow_nan=False))
def test_never_scientific(value: float) -> None:
    for text in (quantity(value, "B"), quantity(value), seconds(value)):
        assert "e+" not in text and "e-" not in text, text


def _texts(fig) -> list[str]:  # type: ignore[no-untyped-def]
    fig.canvas.draw()
    return [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text")) if t.get_text()]


def test_roofline_png_labels_use_the_formatter() -> None:
    import matplotlib.pyplot as plt

    import solar
    from solar.backends.report import draw_roofline

    analysis = solar.analyze(str(ROOT / "examples" / "mlp.sir"), targets=("h100", "b200"))
    fig = draw_roofline(analysis.results.reports)
    try:
        texts = _texts(fig)
    finally:
        plt.close(fig)
    assert not [t for t in texts if "e+" in t or "e-0" in t or "^" in t]
    assert "fp32 vector: 66.9 TFLOP/s" in texts
    assert any(t.endswith(" TFLOP/s") for t in texts if t != "fp32 vector: 66.9 TFLOP/s")  # a tick label


def test_sweep_plot_merges_coinciding_series(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    import solar

    analysis = solar.analyze(str(ROOT / "examples" / "mlp.sir"), targets=("h100",))
    analysis.sweep(B=[1, 2, 4, 8, 16])
    from solar.backends.sweep_report import _distinct_series, run_sweep

    outcome = run_sweep(analysis._surface, {"B": [1, 2, 4, 8, 16]}, None)
    series = _distinct_series(outcome.sweep.arrays["h100-sxm"], (slice(None),))
    names = [same for _, same, _ in series]
    # mlp is one greedy group over the whole graph: fused and whole graph coincide, one line names both.
    assert ["fused", "whole_graph"] in names and sum(len(n) for n in names) == 3
    plt.close("all")


MATMUL_4096 = """\
solar.module @mm {
  solar.func @main(%a: tensor<4096x4096xbf16>, %b: tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16> {
    %c = solar.einsum @mm "ik,kj->ij" (%a as A, %b as B) -> (C: tensor<4096x4096xbf16>) {
      C += A * B
    }
    solar.return %c
  }
}
"""


def test_the_terminal_tables_print_intensity_with_the_formatter() -> None:
    """A 4096³ bf16 matmul does 2·4096³ FLOPs over 3·4096²·2 bytes: 1,365.33 FLOP/B, printed `1.37k`."""
    import solar
    from solar.backends.report import render_report

    text = render_report(solar.analyze(MATMUL_4096, targets=("h100",)).results.reports, "mm")
    assert "1.37k" in text and "e+" not in text, text
