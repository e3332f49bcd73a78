"""solar-bench's measurement conditions (issue 26, item 5): load, CPU steal, other processes' CPU share and
the runs' spread are recorded; a busy run is marked noisy in one line; --quiet-wait waits for a quiet machine;
violations are still judged on the minimum; the summary and the plot leave noisy records out. Every figure
comes from injected probes, never from this machine's real load."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from solar.bench import conditions as conditions_module
from solar.bench.conditions import CpuSample, Monitor, Probes, spread_of

pytest.importorskip("torch")

from solar.bench.problem import BenchOptions, bench_problem
from solar.bench.summary import coverage, plot_headroom, render_problem, render_summary
from solar.tools.solar_bench import run as cli

DATA = Path(__file__).parent / "data" / "bench"
FAST = {"budget_s": 0.02, "warmup": 1, "min_runs": 3}


class FakeMachine:
    """A machine of `online` CPUs whose other processes keep `others` CPUs busy and whose hypervisor steals
    `steal` of the time; `busy_until` seconds of its clock are crowded, then it is quiet."""

    def __init__(self, load: float | None = 0.5, others: float = 0.0, steal: float = 0.0, online: int = 4,
                 busy_until: float = 0.0) -> None:
        self.load, self.others, self.steal, self.online, self.busy_until = load, others, steal, online, busy_until
        self.now = 0.0
        self.busy = self.stolen = self.total = 0.0

    def sleep(self, seconds: float) -> None:
        crowded = self.others if self.now < self.busy_until or not self.busy_until else 0.0
        self.busy += crowded * seconds
        self.stolen += self.steal * self.online * seconds
        self.total += self.online * seconds
        self.now += seconds

    def sample(self) -> CpuSample:
        return CpuSample(self.busy, self.stolen, self.total, 0.0, self.now, self.online)

    def probes(self) -> Probes:
        return Probes(lambda: self.load, self.sample, self.sleep, lambda: self.now)


def conditions(machine: FakeMachine, cpus: int = 4, threads: int = 4, spreads: dict[str, float] | None = None
               ) -> Any:
    monitor = Monitor(machine.probes(), cpus, threads)
    monitor.start()
    machine.sleep(2.0)  # the timed runs
    return monitor.finish(spreads or {"eager": 0.05})


def test_a_quiet_machine_is_no_noise() -> None:
    cond = conditions(FakeMachine(load=1.0, others=0.1))
    assert not cond.noisy and cond.reasons == []
    doc = cond.to_json()
    assert doc["load_1m"] == 1.0 and doc["others_cpus"] == pytest.approx(0.1) and doc["steal_share"] == 0.0
    assert doc["others_share"] == pytest.approx(0.025) and doc["spread"] == {"eager": 0.05}


def test_each_sign_of_a_busy_machine_is_a_reason() -> None:
    assert conditions(FakeMachine(load=4.4), cpus=2, threads=2).reasons == ["load 4.40 on 2 CPUs"]
    assert conditions(FakeMachine(steal=0.1)).reasons == ["the hypervisor stole 10% of the CPU time"]
    crowded = conditions(FakeMachine(others=1.5), threads=3)
    assert crowded.reasons == ["other processes kept 1.50 of 4 CPUs busy (38%), leaving fewer than the 3 threads "
                               "measured"]
    # Others on CPUs the measurement does not use leave its threads alone.
    assert not conditions(FakeMachine(others=1.5), threads=2).noisy
    assert conditions(FakeMachine(), spreads={"eager": 0.8, "compile": 0.1}).reasons == [
        "eager's median is 80% above its minimum"]
    assert spread_of(0.3, 0.2) == pytest.approx(0.5)


def test_no_accounting_means_no_claim() -> None:
    probes = Probes(lambda: None, lambda: None, lambda s: None, lambda: 0.0)
    monitor = Monitor(probes, 2, 2)
    monitor.start()
    cond = monitor.finish({})
    assert not cond.noisy and cond.load_1m is None and cond.others_cpus is None


def test_quiet_wait_waits_for_the_others_to_finish_and_no_longer() -> None:
    machine = FakeMachine(others=3.0, busy_until=3.0)
    monitor = Monitor(machine.probes(), 4, 4)
    assert monitor.wait_for_quiet(30.0) == pytest.approx(4.0)  # three crowded windows, then a quiet one
    machine = FakeMachine(others=3.0, busy_until=1000.0)
    assert Monitor(machine.probes(), 4, 4).wait_for_quiet(5.0) == pytest.approx(5.0)
    assert Monitor(FakeMachine(others=3.0).probes(), 4, 4).wait_for_quiet(0.0) == 0.0


def _bench(machine: FakeMachine, **kw: Any) -> dict[str, Any]:
    opts = BenchOptions(targets=["host"], frameworks=["eager"], timing=FAST, device="cpu", **kw)
    return bench_problem(str(DATA / "matmul.py"), opts, machine.probes())


def test_a_busy_run_is_recorded_noisy_and_marked_wherever_its_headroom_shows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conditions_module, "SPREAD_LIMIT", math.inf)  # the real runs' spread is this machine's
    busy = _bench(FakeMachine(load=64.0, online=1024))
    assert busy["status"] == "ok" and busy["noisy"] is True
    assert busy["conditions"]["reasons"][0].startswith("load 64.00 on ")
    assert busy["measurements"]["eager"]["min_s"] > 0 and "eager" in busy["conditions"]["spread"]
    # The minimum is still judged: the verdict does not depend on the noise.
    assert "violations" in busy and "host" in busy["headroom"]
    text = render_problem(busy)
    assert "eager ÷ host SOL (noisy)" in text
    assert sum(1 for line in text.splitlines() if line.startswith("noisy: load 64.00")) == 1
    quiet = _bench(FakeMachine(load=0.0, online=1024))
    assert quiet["noisy"] is False and "(noisy)" not in render_problem(quiet)
    quiet["problem"], busy["problem"] = "quiet.py", "busy.py"
    summary = render_summary([quiet, busy])
    assert "noisy: 1 measured on a busy machine, left out of the headroom: busy.py" in summary
    assert coverage([quiet, busy])["noisy"] == 1
    row = next(line for line in summary.splitlines() if "│ eager" in line and "whole graph" in line)
    assert row.split("│")[4].strip() == "1"  # one problem in the headroom: the quiet one
    # The plot's place says why it is empty (bench/headroom_plot.py); --keep-noisy draws the record, marked.
    assert "1 noisy record(s) left out" in (plot_headroom([busy], str(tmp_path / "p.png")) or "")
    assert plot_headroom([busy], str(tmp_path / "p.png"), keep_noisy=True) is None


def test_quiet_wait_is_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conditions_module, "SPREAD_LIMIT", math.inf)
    rec = _bench(FakeMachine(load=0.0, others=2000.0, online=1024, busy_until=2.0), quiet_wait_s=10.0)
    assert rec["conditions"]["waited_s"] == pytest.approx(3.0) and rec["noisy"] is False


@pytest.mark.parametrize("flag", [["--quiet-wait", "nan"], ["--quiet-wait", "-1"], ["--budget", "nan"],
                                  ["--timeout", "nan"], ["--timeout", "inf"]])
def test_limits_that_are_not_finite_are_refused(flag: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli([str(DATA / "matmul.py"), "--no-measure", *flag]) == 1
    err = capsys.readouterr().err
    assert err.startswith("solar-bench: error: --budget") and err.count("\n") == 1
