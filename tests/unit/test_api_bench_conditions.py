"""`Analysis.bench()` records the machine's conditions as solar-bench does, marks a busy machine's record
noisy, and the verdict and HTML say so."""

from __future__ import annotations

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
    assert 'id="noisy"' in analysis.to_html()
