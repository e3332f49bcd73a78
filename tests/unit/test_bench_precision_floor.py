"""solar-bench --precision-floor (docs/bench.md): the bounds a run is judged by priced as a kernel allowed to
compute at the floor would be (backends/precision_policy.py), in one problem's record and table, a batch's
summary and headroom plot, and `--measured`; a bad floor is solar-opt's one error line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from solar.backends.cost import Peaks
from solar.bench.headroom_plot import plot_headroom
from solar.bench.problem import BenchOptions, bench_problem
from solar.bench.summary import render_problem, render_summary
from solar.ir.dtypes import DType
from solar.targets.loader import load_target
from solar.tools.solar_bench import run as cli

DATA = Path(__file__).parent / "data" / "bench"
N = 2048
FLOPS = 2 * N**3
SIZES = {"params": {"M": N, "K": N, "N": N}}
H100 = load_target("h100")


def test_the_floor_prices_the_bounds_and_the_record_says_so() -> None:
    opts = BenchOptions(targets=["h100"], sizes=SIZES, measure=False, device="cpu", precision_floor="bf16")
    rec = bench_problem(str(DATA / "matmul.py"), opts)
    assert rec["status"] == "ok", rec["errors"]
    bf16 = Peaks(H100, "bf16").choice(DType.F32, True).flop_per_s
    assert bf16 == 989.4e12 > Peaks(H100).choice(DType.F32, True).flop_per_s  # the floor is faster than f32's own
    # 17.2 GFLOP at the bf16 tensor peak (17.4 µs) outweighs the 50.3 MB at 3.35 TB/s (15.0 µs): compute-bound.
    assert rec["bounds"]["h100-sxm"]["fused"] == pytest.approx(FLOPS / bf16)
    assert rec["counts"]["bytes"]["fused"] == 3 * N * N * 4  # the bytes stay the program's
    assert rec["precision_floor"] == "bf16"
    assert rec["precision_policy"].endswith("precision floor bf16 (float contractions at bf16 where that is faster)")
    assert "precision policy: " + rec["precision_policy"] in render_problem(rec)


def _measured(problem: str, floor: str | None, headroom: float) -> dict[str, Any]:
    return {"problem": problem, "status": "ok", "precision_floor": floor, "bounds": {"host": {"fused": 1e-6}},
            "headroom": {"host": {"eager": {"fused": {"median": headroom, "min": headroom}}}}}


def test_a_batch_says_which_floor_its_headroom_is_against(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    records = [_measured("a.py", "bf16", 3.0), _measured("b.py", "bf16", 5.0), _measured("c.py", None, 2.0)]
    assert ("precision floor bf16: contractions priced at it where that is faster (1 record(s) without a floor)"
            in render_summary(records))
    assert "precision floor" not in render_summary(records[2:])
    titles: list[str] = []
    original = Figure.savefig

    def capture(fig: Figure, *args: Any, **kwargs: Any) -> None:
        titles.extend(ax.get_title() for ax in fig.axes)
        original(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", capture)
    assert plot_headroom(records, str(tmp_path / "h.png")) is None
    assert titles == ["eager on host\nSOL under precision floor bf16"]


def test_measured_times_are_judged_under_the_floor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    problem = tmp_path / "mm.py"
    problem.write_text((DATA / "matmul.py").read_text().replace("M, K, N = 64, 64, 64", f"M, K, N = {N}, {N}, {N}"))
    times = tmp_path / "t.csv"
    # A bf16 kernel's 100 µs: below the f32 program's 257 µs (a violation without the floor), 5.7× the floor's.
    # The target by its alias (`h100`; the bounds are keyed `h100-sxm`): once an internal error.
    times.write_text("problem,target,framework,min_s\nmm.py,h100,eager,0.0001\n")
    out = tmp_path / "m.json"
    assert cli([str(problem), "--measured", str(times), "--precision-floor", "bf16", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert ("measured: bounds under precision floor bf16 (float contractions priced at bf16 where that is faster)"
            in text)
    doc = json.loads(out.read_text())
    assert doc["precision_floor"] == "bf16"
    assert doc["verdicts"][0]["bound_s"] == pytest.approx(FLOPS / 989.4e12) and not doc["verdicts"][0]["violation"]


def test_a_bad_floor_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli([str(DATA / "matmul.py"), "--no-measure", "--precision-floor", "fp4"]) == 1
    assert capsys.readouterr().err == ("solar-bench: error: --precision-floor: bad precision 'fp4': expected one of "
                                       "tf32, bf16, fp16, f16, fp8\n")
