"""Numbers past 1,000 in every output a person reads: intensities in the HTML tables (`1.37k`), headroom and
gains as ratios (`2,000×`), never `1.37e+03` or `2e+03×` (the one formatter, backends/report.py)."""

from __future__ import annotations

import re

import pytest

import solar
from solar.backends.report import ratio

N = 8192  # intensity 2N³ / (3·N²·4 B) = 1,365 FLOP/B
MM = f"""
solar.module @mm [N = {N}] {{
  solar.func @main(%x: tensor<NxNxf32>, %w: tensor<NxNxf32>) -> tensor<NxNxf32> {{
    %h = solar.kernel @fc(%x as X, %w as W) -> (H: tensor<NxNxf32>) {{
      affine.for %i = 0 to N {{
        affine.for %j = 0 to N {{
          affine.for %k = 0 to N {{
            H[%i, %j] += X[%i, %k] * W[%k, %j]
          }}
        }}
      }}
    }}
    solar.return %h
  }}
}}
"""
SCIENTIFIC = re.compile(r"\d(?:\.\d+)?e[+-]?\d")


def _visible(page: str) -> str:
    """The page's text as a person reads it: no scripts, no styles, no tags or their attributes."""
    page = re.sub(r"<(script|style)\b.*?</\1>", "", page, flags=re.S)
    return re.sub(r"<[^>]*>", " ", page)


@pytest.mark.parametrize(("value", "text"), [(7.44, "7.44×"), (999.4, "999×"), (999.5, "1,000×"),
                                             (2000.0, "2,000×"), (123456.0, "123,456×"), (0.373, "0.373×")])
def test_ratio(value: float, text: str) -> None:
    assert ratio(value) == text


def test_html_tables_and_measured_labels_never_scientific() -> None:
    analysis = solar.analyze(MM, targets=("h100",))
    fused = analysis.to_json()["targets"][0]["modes"]["fused"]
    analysis.measured = {"measurements": {"eager": {"median_s": 2000 * fused["time_s"]}},
                         "headroom": {"h100-sxm": {"eager": {"fused": {"median": 2000.0, "min": 1990.0}}}}}
    text = _visible(analysis.to_html())
    assert SCIENTIFIC.findall(text) == []
    assert ">1.37k<" in analysis.to_html().replace(" ", "")  # the unit's intensity
    assert "measured eager (2,000× under the fused SOL)" in text and "2,000× the fused SOL" in " ".join(
        analysis.verdict)


@pytest.mark.parametrize(("lo", "hi", "labels"), [(0.8e9, 4.5e9, ["1 Gtokens/s", "2 Gtokens/s"]),
                                                  (1e-7, 1e-4, ["100 ns", "1 µs", "10 µs", "100 µs"])])
def test_a_narrow_log_axis_labels_its_2x_and_5x_ticks(lo: float, hi: float, labels: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from solar.backends.report import format_axis, quantity, seconds

    fig, ax = plt.subplots()
    try:
        ax.set_yscale("log")
        ax.set_ylim(lo, hi)
        format_axis(ax.yaxis, seconds if lo < 1 else lambda v: quantity(v, "tokens/s"))
        fig.canvas.draw()
        shown = [t.get_text() for t in ax.get_yticklabels(minor=False) + ax.get_yticklabels(minor=True)
                 if t.get_text() and lo <= t.get_position()[1] <= hi]
    finally:
        plt.close(fig)
    # Past 20× the decades alone are labelled (2× and 5× would crowd them); under it the axis is never one label.
    assert shown == labels


def test_inverse_roofline_factors_never_scientific(capsys: pytest.CaptureFixture[str]) -> None:
    import os
    from pathlib import Path

    from solar.tools.solar_opt import run

    mlp = Path(__file__).resolve().parents[2] / "examples" / "mlp.sir"
    assert run([str(mlp), "--lift-einsum", "--fuse", "--sol=h100", "--sweep", "B=1..65536*4", "--target-latency",
                "1ns", "-o", os.devnull]) == 0
    said = capsys.readouterr()
    text = said.out + said.err
    # 1 ns is ~1,500× too fast for one batch of the MLP and ~1.5 million× for 65,536: the factors say so in SI.
    assert "│ fused (Σ groups)    │               1.51k │         999 │  1.51k │" in text
    assert "h100-sxm fused: ×941 at the first point, ×1.54M at the last" in text
    assert SCIENTIFIC.findall(text) == []
