"""`solar-bench --measured`: times measured elsewhere judged by the bound at the same sizes.

The corpus check bounds 22 KernelBench problems (rewritten under tests/measured_corpus at the sizes KernelBench
timed) on the H100 PCIe and holds them to KernelBench's published H100 PCIe timings (tests/unit/data/measured):
no time may be below its bound, and the tightest near-misses keep their margins."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from solar.bench.bounds import Bounds
from solar.bench.measured import (
    MeasuredError,
    MeasuredTime,
    framework_of,
    judge_times,
    match,
    read_measured,
    warm_bound,
)
from solar.bench.measured_run import bound_problem, run_measured
from solar.bench.trace_join import function_lines, normalise_op, read_trace
from solar.tools.solar_bench import run as cli

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "measured_corpus"
DATA = Path(__file__).parent / "data" / "measured"
TIMINGS = [str(DATA / "kernelbench_h100_pcie_eager.json"), str(DATA / "kernelbench_h100_pcie_compile.json")]
TARGET = "h100-pcie"
L2 = 50 * 2**20

_BOUNDS: dict[str, Bounds] = {}


def cached_bound(path: str, targets: list[str]) -> Bounds:
    """Each problem is translated and bounded once per test session."""
    key = os.path.abspath(path)
    if key not in _BOUNDS:
        _BOUNDS[key] = bound_problem(path, [TARGET])
    return _BOUNDS[key]


def _times() -> list[MeasuredTime]:
    return [t for path in TIMINGS for t in read_measured(path)]


def _cases() -> list[Any]:
    return [pytest.param(t, id=f"{t.problem}:{t.framework}")
            for t in sorted(_times(), key=lambda t: (t.problem, t.framework))]


# ---- reading ----------------------------------------------------------------------------------------------


def test_kernelbench_json_is_read_in_seconds_with_its_target_and_framework() -> None:
    times = _times()
    assert len(times) == 44
    mse = {t.framework: t for t in times if t.problem == "level1/94_MSELoss.py"}
    assert mse["eager"].min_s == pytest.approx(13.6e-3) and mse["compile"].min_s == pytest.approx(4.34e-3)
    assert {t.target for t in times} == {TARGET}
    assert framework_of("baseline_time_torch_compile_inductor_default.json") == "compile"
    assert framework_of("baseline_time_torch.json") == "eager"


def test_csv_rows_and_its_errors(tmp_path: Path) -> None:
    good = tmp_path / "t.csv"
    good.write_text("problem,target,framework,min_s\nlevel1/19_ReLU.py,h100-pcie,eager,0.00695\n\n")
    (t,) = read_measured(str(good))
    assert (t.problem, t.target, t.framework, t.min_s) == ("level1/19_ReLU.py", TARGET, "eager", 0.00695)
    for text, why in (("name,min\n", "header"), ("problem,target,framework,min_s\na,b,c\n", "3 columns"),
                      ("problem,target,framework,min_s\na,b,c,fast\n", "not a number"),
                      ("problem,target,framework,min_s\na,b,c,-1\n", "positive")):
        good.write_text(text)
        with pytest.raises(MeasuredError, match=why):
            read_measured(str(good))


def test_problems_match_by_relative_path_file_name_or_level_folder() -> None:
    t = MeasuredTime("level1/19_ReLU.py", TARGET, "eager", 1.0, "x")
    assert match([t], str(CORPUS / "level1" / "19_ReLU.py"), None) == [t]
    assert match([t], str(CORPUS / "level1" / "19_ReLU.py"), str(CORPUS)) == [t]
    assert match([t], str(CORPUS / "level2" / "19_ReLU.py"), None) == []
    bare = MeasuredTime("19_ReLU.py", TARGET, "eager", 1.0, "x")
    assert match([bare], "/anywhere/19_ReLU.py", None) == [bare]


# ---- the published timings against our bounds -------------------------------------------------------------


@pytest.mark.parametrize("time", _cases())
def test_no_published_time_is_below_its_bound(time: MeasuredTime) -> None:
    path = CORPUS / time.problem
    (verdict,) = judge_times(cached_bound(str(path), [TARGET]), str(path), [time], "warm")
    assert verdict.ratio >= 1.0, verdict.line()


# The tightest margins, warm L2: memory-bound problems of gigabytes measured within a few percent of the DRAM
# roofline (torch.compile's MSE and Huber losses stream 8.59 GB at 1.98 TB/s of the part's 2.04 TB/s). ReLU,
# 1.088 against the datasheet's 2.0 TB/s, is 1.110 against 2.04 TB/s: no longer a near-miss.
NEAR_MISSES = {("level1/94_MSELoss.py", "compile"): 1.0434, ("level1/96_HuberLoss.py", "compile"): 1.0434,
               ("level1/100_HingeLoss.py", "compile"): 1.0711, ("level1/47_Sum_reduction_over_a_dimension.py",
                                                                "eager"): 1.0915}


@pytest.mark.parametrize("key", sorted(NEAR_MISSES), ids=lambda k: f"{k[0]}:{k[1]}")
def test_near_misses_keep_their_margins(key: tuple[str, str]) -> None:
    (time,) = [t for t in _times() if (t.problem, t.framework) == key]
    path = CORPUS / time.problem
    (verdict,) = judge_times(cached_bound(str(path), [TARGET]), str(path), [time], "warm")
    assert verdict.near_miss
    assert verdict.tightest.mode == "fused"
    assert verdict.ratio == pytest.approx(NEAR_MISSES[key], abs=1e-3)


def test_the_warm_l2_bound_takes_twice_the_l2_off_the_whole_graph_traffic() -> None:
    bounds = cached_bound(str(CORPUS / "level1" / "40_LayerNorm.py"), [TARGET])
    tb = bounds.targets[TARGET]
    assert tb.llc_bytes == L2
    whole = tb.report.modes["whole_graph"]
    # input and output 16 x 64 x 256 x 256 f32, weight and bias 64 x 256 x 256 f32
    assert whole.bytes == 2 * 16 * 64 * 256 * 256 * 4 + 2 * 64 * 256 * 256 * 4
    assert warm_bound(tb, "whole_graph") == pytest.approx((whole.bytes - 2 * L2) / 2.04e12)
    assert warm_bound(tb, "fused") == pytest.approx((whole.bytes - 2 * L2) / 2.04e12)
    assert tb.seconds["fused"] == pytest.approx(whole.bytes / 2.04e12)
    # a compute-bound problem keeps its bound: a GEMM of 137 GFLOP at the FP32 vector peak
    gemm = cached_bound(str(CORPUS / "level1" / "1_Square_matrix_multiplication_.py"), [TARGET]).targets[TARGET]
    assert warm_bound(gemm, "fused") == gemm.seconds["fused"] == pytest.approx(2 * 4096**3 / 51.2e12)


def test_flushed_l2_judges_by_the_plain_bounds() -> None:
    path = str(CORPUS / "level1" / "40_LayerNorm.py")
    t = MeasuredTime("level1/40_LayerNorm.py", TARGET, "eager", 0.00026, "x")
    bounds = cached_bound(path, [TARGET])
    (warm,) = judge_times(bounds, path, [t], "warm")
    (flushed,) = judge_times(bounds, path, [t], "flushed")
    assert not warm.violation  # 0.26 ms beats the cold 0.280 ms, but a warm L2 could serve 105 MB of it
    assert flushed.violation and flushed.tightest.bound_s == pytest.approx(570425344 / 2.04e12)


def test_a_directory_run_joins_every_problem_without_a_violation() -> None:
    # The Mamba2 einsums were below their bound (0.244 to 0.837) while the 4-operand einsum was priced in its
    # written order; the cheapest pairwise order and dead-code removal put every measured time above it.
    run = run_measured(str(CORPUS), TIMINGS, "warm", bound=cached_bound)
    assert len(run.verdicts) == 44 and not run.unmatched and not run.failed
    assert not run.violations
    text = run.render()
    assert "near-miss: level1/94_MSELoss.py compile on h100-pcie: measured 4.34 ms, fused bound 4.16 ms " \
           "(warm L2; 4.21 ms from a cold L2), ratio 1.043" in text
    assert "measured: 44 times joined to their bounds:" in text


# ---- the command ------------------------------------------------------------------------------------------


def test_cli_exits_3_on_a_violation_and_writes_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv = tmp_path / "times.csv"
    csv.write_text("problem,target,framework,min_s\n19_ReLU.py,h100-pcie,eager,0.00695\n"
                   "19_ReLU.py,h100-pcie,compile,0.005\n")
    out = tmp_path / "out.json"
    code = cli([str(CORPUS / "level1" / "19_ReLU.py"), "--measured", str(csv), "--json", str(out)])
    text = capsys.readouterr().out
    assert code == 3
    assert ("VIOLATION: 19_ReLU.py compile on h100-pcie: measured 5 ms, fused bound 6.26 ms (warm L2; "
            "6.32 ms from a cold L2), ratio 0.798") in text
    doc = json.loads(out.read_text())
    assert [v["violation"] for v in doc["verdicts"]] == [False, True]


def test_cli_match_narrows_a_directory(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli([str(CORPUS), "--measured", TIMINGS[0], "--match", "level1/9[46]_*"]) == 0
    out = capsys.readouterr().out
    assert "measured: 2 times joined to their bounds: 0 violation(s), 0 near-miss(es) (ratio < 1.1), 2 clear" in out


def test_cli_usage_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n")
    assert cli([str(CORPUS / "level1" / "19_ReLU.py"), "--measured", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "solar-bench: error: --measured" in err and "header" in err
    assert cli([str(CORPUS / "level1" / "19_ReLU.py"), "--measured", str(tmp_path / "none.json")]) == 1
    assert "no such file" in capsys.readouterr().err
    bad.write_text("problem,target,framework,min_s\n19_ReLU.py,h900,eager,0.1\n")
    assert cli([str(CORPUS / "level1" / "19_ReLU.py"), "--measured", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "target 'h900'" in err


# ---- a profiler trace joined to the units -----------------------------------------------------------------

TINY = '''\
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4096, 4096, bias=False)

    def forward(self, x):
        h = self.fc(x)
        h = torch.relu(h)
        return h.softmax(-1)


def get_inputs():
    return [torch.rand(4096, 4096)]


def get_init_inputs():
    return []
'''


def _trace(kernel_us: dict[str, float], with_lines: bool = False, steps: int = 2) -> dict[str, Any]:
    """A trace as torch.profiler exports it from a CUDA run: per step a ProfilerStep range, the forward's
    Python frame (named by its first line, line 9), the ATen calls (linear around mm, softmax around _softmax)
    and the kernels they launched, linked by External id; one memset no call launched."""
    ev: list[dict[str, Any]] = []
    ext = iter(range(1, 1000))

    def cpu(cat: str, name: str, ts: float, dur: float, **args: Any) -> None:
        ev.append({"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args})

    for s in range(steps):
        t0 = s * 10_000.0
        cpu("user_annotation", f"ProfilerStep#{s}", t0, 9_000)
        cpu("python_function", "/remote/job/tiny.py(9): forward", t0 + 10, 8_000)
        for k, (op, inner, line) in enumerate((("aten::linear", "aten::mm", 10), ("aten::relu", None, 11),
                                               ("aten::softmax", "aten::_softmax", 12))):
            start = t0 + 100 + 1_000 * k
            if with_lines:
                cpu("user_annotation", f"solar-line:/remote/job/tiny.py:{line}", start - 5, 500)
            outer = next(ext)
            cpu("cpu_op", op, start, 100, **{"External id": outer})
            launch = outer
            if inner:
                launch = next(ext)
                cpu("cpu_op", inner, start + 10, 50, **{"External id": launch})
            name = op.split("::")[1]
            ev.append({"ph": "X", "cat": "kernel", "name": f"{name}_kernel", "pid": 0, "tid": 7,
                       "ts": start + 20, "dur": kernel_us[name], "args": {"External id": launch}})
        ev.append({"ph": "X", "cat": "gpu_memset", "name": "Memset", "pid": 0, "tid": 7, "ts": t0 + 5_000,
                   "dur": 1.0, "args": {"External id": 999_999}})
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 PCIe"}], "traceEvents": ev}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("trace") / "tiny.py"
    path.write_text(TINY)
    return path


def test_trace_kernels_get_their_op_line_and_step(tiny: Path, tmp_path: Path) -> None:
    trace_file = tmp_path / "trace.json"
    trace_file.write_text(json.dumps(_trace({"linear": 3000.0, "relu": 50.0, "softmax": 80.0})))
    trace = read_trace(str(trace_file), str(tiny))
    assert trace.device == "NVIDIA H100 PCIe" and trace.runs == 2
    assert [(k.op, k.line, k.line_kind, k.step) for k in trace.kernels[:4]] == [
        ("linear", 9, "function", 0), ("relu", 9, "function", 0), ("softmax", 9, "function", 0),
        (None, None, "none", 0)]
    assert normalise_op("aten::_softmax") == "softmax"
    assert function_lines(str(tiny))[11] == 9


@pytest.mark.parametrize("with_lines", [False, True], ids=["python-frames", "solar-line-ranges"])
def test_a_trace_gives_each_unit_its_time_and_flags_a_unit_below_its_bound(
        tiny: Path, tmp_path: Path, with_lines: bool, capsys: pytest.CaptureFixture[str]) -> None:
    trace_file = tmp_path / "trace.json"
    # the linear is 137 GFLOP: 2.68 ms at the FP32 vector peak, so a 1 ms kernel is impossible
    trace_file.write_text(json.dumps(_trace({"linear": 1000.0, "relu": 50.0, "softmax": 80.0}, with_lines)))
    run = run_measured(str(tiny), [str(trace_file)], "warm")
    rows = {r["unit"]: r for r in run.units}
    assert set(rows) == {"@linear", "@relu", "@softmax", None}
    assert rows["@linear"]["measured_s"] == pytest.approx(1e-3) and rows["@linear"]["kernels"] == 2
    assert rows["@linear"]["bound_s"] == pytest.approx(2 * 4096**3 / 51.2e12)
    assert rows["@linear"]["violation"] and not rows["@relu"]["violation"]
    assert rows["@relu"]["measured_s"] == pytest.approx(50e-6)
    assert rows["@relu"]["where"] == "tiny.py:11"
    assert rows[None]["kernels"] == 2 and rows[None]["measured_s"] == pytest.approx(1e-6)
    (whole,) = run.verdicts
    assert whole.time.min_s == pytest.approx((1000 + 50 + 80 + 1) * 1e-6) and whole.time.target == TARGET
    assert cli([str(tiny), "--measured", str(trace_file)]) == 3
    out = capsys.readouterr().out
    assert ("VIOLATION: @linear (tiny.py:10): measured 1 ms over 2 kernel(s), bound 2.68 ms (warm L2), "
            "ratio 0.373, headroom 0.373× over its SOL 2.68 ms") in out
    assert "unit: kernels of no unit: 1 µs over 2 kernel(s)" in out


def test_trace_errors(tiny: Path, tmp_path: Path) -> None:
    trace_file = tmp_path / "trace.json"
    doc = _trace({"linear": 1.0, "relu": 1.0, "softmax": 1.0})
    trace_file.write_text(json.dumps({**doc, "traceEvents": [e for e in doc["traceEvents"] if e["cat"] == "cpu_op"]}))
    with pytest.raises(MeasuredError, match="no GPU kernels"):
        read_trace(str(trace_file), str(tiny))
    trace_file.write_text(json.dumps({**doc, "deviceProperties": [{"name": "Some GPU"}]}))
    with pytest.raises(MeasuredError, match="names no known GPU"):
        run_measured(str(tiny), [str(trace_file)], "warm")
    # the target then comes from --target
    assert {v.time.target for v in run_measured(str(tiny), [str(trace_file)], "warm", "h100-sxm").verdicts} == {
        "h100-sxm"}


def test_kernelbench_json_errors(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    for doc, why in (([], "KernelBench's timing JSON"), ({"level1": []}, "holds no problems"),
                     ({"level1": {"a.py": {"mean": 1.0}}}, "no 'min'"),
                     ({"level1": {"a.py": {"min": 1.0, "hardware": "Abacus"}}}, "no target for hardware 'Abacus'")):
        path.write_text(json.dumps(doc))
        with pytest.raises(MeasuredError, match=why):
            read_measured(str(path))
    path.write_text("{nope")
    with pytest.raises(MeasuredError, match="not JSON"):
        read_measured(str(path))


def test_a_trace_needs_one_problem(tmp_path: Path) -> None:
    trace_file = tmp_path / "trace.json"
    trace_file.write_text(json.dumps(_trace({"linear": 1.0, "relu": 1.0, "softmax": 1.0})))
    with pytest.raises(MeasuredError, match="one problem"):
        run_measured(str(CORPUS), [str(trace_file)], "warm", bound=cached_bound)


def test_kernelbench_style_programs_are_self_contained() -> None:
    for path in CORPUS.rglob("*.py"):
        text = path.read_text()
        assert "def get_inputs" in text and "def get_init_inputs" in text, path
        assert "import einops" not in text and "from einops" not in text, path


def test_readme_names_the_source() -> None:
    text = (DATA / "README.md").read_text()
    assert "ScalingIntelligence/KernelBench" in text and "MIT" in text
