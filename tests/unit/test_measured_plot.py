"""`solar-bench --measured FILE --plot FILE.png`: times measured elsewhere as achieved points on the roofline,
each under its problem's fused SOL at the fused intensity, joined to it and named with the gap."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from solar.bench.measured import MeasuredRun
from solar.bench.measured_plot import plot_measured
from solar.tools.solar_bench import run as cli

DATA = Path(__file__).parent / "data" / "bench"
N = 2048
FLOPS = 2 * N**3
FUSED_BYTES = 3 * N * N * 4


def _drawn(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The figures saved while the test runs, drawn (their texts laid out)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figures: list[Any] = []
    original = Figure.savefig

    def capture(fig: Figure, *args: Any, **kwargs: Any) -> None:
        fig.canvas.draw()
        figures.append(fig)
        original(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", capture)
    return figures


def test_each_time_sits_under_its_sol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import matplotlib

    problem = tmp_path / "mm.py"
    problem.write_text((DATA / "matmul.py").read_text().replace("M, K, N = 64, 64, 64", f"M, K, N = {N}, {N}, {N}"))
    times = tmp_path / "t.csv"
    times.write_text("problem,target,framework,min_s\nmm.py,h100,eager,0.0004\nmm.py,h100,compile,0.0003\n")
    figures = _drawn(monkeypatch)
    assert cli([str(problem), "--measured", str(times), "--plot", str(tmp_path / "roof.png")]) == 0
    (fig,) = figures
    ax = fig.axes[0]
    hollow = next(c for c in ax.collections if c.get_gid() == "measured-points")
    square = next(c for c in ax.collections if c.get_label() == "fused SOL")
    intensity = FLOPS / FUSED_BYTES  # 341 FLOP/B
    # The f32 matmul's fused SOL: 17.2 GFLOP on H100's fp32 vector units (66.9 TFLOP/s), 257 µs.
    assert [tuple(p) for p in square.get_offsets()] == [pytest.approx((intensity, 66.9e12))] * 2
    assert [tuple(p) for p in hollow.get_offsets()] == [pytest.approx((intensity, FLOPS / 4e-4)),
                                                         pytest.approx((intensity, FLOPS / 3e-4))]
    texts = [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]
    assert "mm.py eager: 1.56× under" in texts and "mm.py compile: 1.17× under" in texts
    assert "fp32 vector: 66.9 TFLOP/s" in texts
    assert not any("e+" in t or "e-0" in t or "$" in t for t in texts), texts


def test_nothing_to_place_says_why(tmp_path: Path) -> None:
    png = tmp_path / "empty.png"
    assert plot_measured(MeasuredRun(), str(png)) == ("no measured time has a place on the roofline (0 time(s) "
                                                      "joined to a bound, none with FLOPs, bytes and a fused bound)")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
