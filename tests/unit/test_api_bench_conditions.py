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
