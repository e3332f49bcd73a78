"""The batch's headroom plot (bench/headroom_plot.py): noisy records left out unless --keep-noisy, then drawn
hollow; an empty plot says why in its place; the outliers are named; every label is the formatter's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from solar.bench.headroom_plot import headroom_points, plot_headroom
from solar.tools.solar_bench import run as cli


def _record(problem: str, headroom: float, noisy: bool) -> dict[str, Any]:
    per_mode = {mode: {"median": headroom * k, "min": headroom * k}
                for mode, k in (("unfused", 1.0), ("fused", 2.0), ("whole_graph", 2.5))}
    return {"problem": problem, "noisy": noisy, "status": "ok", "headroom": {"host": {"eager": per_mode}}}


RECORDS = [_record(f"suite/level1/{k}_problem.py", h, noisy) for k, (h, noisy) in
           enumerate([(1.4, False), (3.0, False), (12.0, False), (250.0, True), (0.8, False)])]


def _texts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text drawn into the figures saved while the test runs (titles, ticks, legends, annotations)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    drawn: list[str] = []
    original = Figure.savefig

    def capture(fig: Figure, *args: Any, **kwargs: Any) -> None:
        fig.canvas.draw()
        drawn.extend(t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text())
        original(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", capture)
    return drawn


def test_noisy_records_are_kept_only_when_asked() -> None:
    assert sum(len(v) for v in headroom_points(RECORDS).values()) == 4 * 3
    kept = headroom_points(RECORDS, keep_noisy=True)[("host", "eager", "fused")]
    assert ("suite/level1/3_problem.py", 500.0, True) in kept and len(kept) == 5


def test_the_plot_names_its_outliers_and_marks_the_noisy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    texts = _texts(monkeypatch)
    assert plot_headroom(RECORDS, str(tmp_path / "h.png"), keep_noisy=True) is None
    assert "eager on host (1 noisy kept, hollow rings)" in texts
    # Per series the two highest are named (the noisy one says so) and the one under 1× (unfused 0.8×).
    assert "3_problem.py (noisy)" in texts and "2_problem.py" in texts and "4_problem.py" in texts
    assert not any("e+" in t or "e-0" in t or "10^" in t for t in texts)
    assert "whole graph (median 7.5×)" in texts and "unfused (median 3×)" in texts
    texts.clear()
    plot_headroom(RECORDS, str(tmp_path / "h2.png"))
    assert "eager on host (1 noisy left out)" in texts and "3_problem.py (noisy)" not in texts
    assert not any("e+" in t for t in texts)


def test_an_empty_plot_says_why_in_its_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    texts = _texts(monkeypatch)
    png = tmp_path / "empty.png"
    reason = plot_headroom([RECORDS[3]], str(png))
    assert reason == ("no problem has a measured headroom to plot (1 noisy record(s) left out: measured on a busy "
                      "machine; --keep-noisy plots them, marked)")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert texts == ["No headroom plot:\nno problem has a measured headroom to plot\n(1 noisy record(s) left out: "
                     "measured on a busy machine; --keep-noisy plots them, marked)"]
    assert cli([str(tmp_path), "--keep-noisy"]) == 1
    assert capsys.readouterr().err == ("solar-bench: error: --keep-noisy is for the headroom plot: give --plot "
                                       "FILE.png with a directory\n")
