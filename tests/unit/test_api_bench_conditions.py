"""`Analysis.bench()` records the machine's conditions as solar-bench does, marks a busy machine's record
noisy, and the verdict and HTML say so."""

from __future__ import annotations

from pathlib import Path

import pytest

import solar
from solar.bench import conditions


def _busy() -> conditions.Probes:
    """A machine whose load average is far above its CPUs (and that gives no CPU accounting)."""
    return conditions.Probes(lambda: 1000.0, lambda: None)


def test_bench_records_conditions_and_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    analysis = solar.analyze(torch.nn.Linear(16, 16), (torch.randn(4, 16),), targets=("host",))
    monkeypatch.setattr(conditions, "system_probes", _busy)
    rec = analysis.bench(budget_s=0.05, warmup=0, min_runs=3, lines=False, device="cpu")
    assert rec["noisy"] is True and rec["conditions"]["noisy"] is True
    assert rec["conditions"]["load_1m"] == 1000.0 and rec["conditions"]["reasons"][0].startswith("load 1000.00 on")
    assert any("(measured on a busy machine: noisy)" in s for s in analysis.verdict)
    page = analysis.to_html()
    assert 'id="noisy"' in page and 'class="measured-point"' in page


def test_measured_point_under_its_sol_on_the_roofline() -> None:
    import re

    from solar.backends.html_svg import measured_points, roofline_svg

    mlp = Path(__file__).resolve().parents[2] / "examples" / "mlp.sir"
    doc = solar.analyze(str(mlp), targets=("h100",)).to_json()
    t = doc["targets"][0]
    fused = t["modes"]["fused"]
    measured = {"measurements": {"eager": {"median_s": 4 * fused["time_s"]}},
                "headroom": {t["name"]: {"eager": {"fused": {"median": 4.0, "min": 4.0}}}}}
    (x, y, label, sol), = measured_points(t, measured)
    assert x == fused["flops"] / fused["bytes"] and sol == pytest.approx(4 * y) and label == "measured eager"
    svg = roofline_svg(t, measured)
    assert len(re.findall(r'class="measured-point"', svg)) == 1 and "measured eager (4× under the fused SOL)" in svg
    assert measured_points(t, None) == [] and 'class="measured-point"' not in roofline_svg(t)


def test_measured_point_on_the_png_roofline(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from solar.backends.report import draw_roofline

    mlp = Path(__file__).resolve().parents[2] / "examples" / "mlp.sir"
    analysis = solar.analyze(str(mlp), targets=("h100",))
    fused = analysis.to_json()["targets"][0]["modes"]["fused"]
    analysis.measured = {"noisy": True, "measurements": {"eager": {"median_s": 4 * fused["time_s"]}},
                         "headroom": {"h100-sxm": {"eager": {"fused": {"median": 4.0, "min": 4.0}}}}}
    fig = draw_roofline(analysis.results.reports, analysis.measured)
    try:
        ax = fig.axes[0]
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert "measured eager (noisy): 4× under the fused SOL" in labels
        # The hollow point sits at the fused intensity, a quarter of the fused SOL's FLOP rate.
        hollow = [c for c in ax.collections if c.get_label().startswith("measured eager")]
        (x, y), = hollow[0].get_offsets()
        assert x == pytest.approx(fused["flops"] / fused["bytes"]) and y == pytest.approx(
            fused["flops"] / (4 * fused["time_s"]))
        fig.canvas.draw()
        texts = [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]
        assert not any("e+" in t or "10^" in t or "$" in t for t in texts), texts
    finally:
        plt.close(fig)
    png = tmp_path / "roofline.png"
    analysis.plot(str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_judges_against_the_sol_the_analysis_shows_under_a_floor() -> None:
    """Under precision_floor the headroom is over the floor's SOL, the one every view of the analysis shows."""
    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(512, 512, bias=False)
    analysis = solar.analyze(model, (torch.randn(512, 512),), targets=("host",), precision_floor="bf16")
    rec = analysis.bench(budget_s=0.05, warmup=0, min_runs=3, lines=False, device="cpu")
    assert rec["precision_floor"] == "bf16"
    for mode in ("unfused", "fused", "whole_graph"):
        assert rec["bounds"]["host"][mode] == pytest.approx(analysis.total(mode, "host"))
