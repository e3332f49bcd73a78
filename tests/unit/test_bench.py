"""solar-bench: sizes, bounds against real runs on the host target, violations, batch mode (failing,
hanging and crashing problems, resume), Dask, the GPU path's skip, the CLI. Sizes are tiny and time
budgets short: these check that bounds hold and the machinery works, not how fast anything is."""

from __future__ import annotations

import json
import math
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("torch")

from solar.bench import conditions, measure, problem
from solar.bench.batch import BatchOptions, ResultsFile, discover, run_batch
from solar.bench.bounds import LOWER_BOUND_MODES
from solar.bench.conditions import Probes
from solar.bench.problem import BenchOptions, bench_problem
from solar.bench.sizes import SizeError, SizeRequest, check_shapes, parse_params, parse_scale, resolve
from solar.bench.summary import coverage, plot_headroom, render_problem, render_summary
from solar.targets.loader import load_target
from solar.tools.solar_bench import run as cli

DATA = Path(__file__).parent / "data" / "bench"
FAST = {"budget_s": 0.05, "warmup": 1, "min_runs": 3}


@pytest.fixture(scope="module", autouse=True)
def _unknown_machine_load() -> Any:
    """These tests judge bounds and machinery, not the machine: the conditions probes read nothing, so no
    record is marked noisy by this machine's real load (tests/unit/test_bench_conditions.py covers noise)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(problem, "system_probes", lambda: Probes(lambda: None, lambda: None))
        mp.setattr(conditions, "SPREAD_LIMIT", math.inf)
        yield


def _opts(**kw: Any) -> BenchOptions:
    base: dict[str, Any] = {"targets": ["host"], "frameworks": ["eager"], "timing": FAST, "device": "cpu"}
    return BenchOptions(**{**base, **kw})


# ---- sizes ---------------------------------------------------------------------------------------------


def test_params_and_scale_rules() -> None:
    assert parse_params(["batch_size=4", "N=8,M=2"]) == {"batch_size": 4, "N": 8, "M": 2}
    for bad in ("x", "N=0", "N=-1", "3=4"):
        with pytest.raises(SizeError):
            parse_params([bad])
    assert parse_scale("0.25").apply(64) == 16
    assert parse_scale("0.25").apply(3) == 3  # kernel sizes, strides: left alone
    assert parse_scale("0.01").apply(64) == 1
    assert parse_scale("max=32").apply(128) == 32 and parse_scale("max=32").apply(16) == 16
    for bad in ("2", "0", "max=0", "half"):
        with pytest.raises(SizeError):
            parse_scale(bad)
    # Globals of the source win over IR parameters; the scale rule goes to the sized globals.
    g, p = resolve(SizeRequest({"B": 8, "BATCH": 2}, parse_scale("0.5")), {"B": 16, "dim": 64}, {"dim": 64},
                   {"BATCH": 16})
    assert g == {"dim": 32, "B": 8} and p == {"BATCH": 2}
    with pytest.raises(SizeError, match="neither a size parameter"):
        resolve(SizeRequest({"nope": 1}), {"B": 16}, {}, {"BATCH": 16})
    with pytest.raises(SizeError, match="the bound would be for other sizes"):
        check_shapes([("x", (4, 8))], [(4, 16)])


def test_param_sets_the_same_sizes_on_both_sides() -> None:
    rec = bench_problem(str(DATA / "matmul.py"), _opts(sizes={"params": {"M": 16, "N": 8}}, measure=False))
    assert rec["status"] == "ok", rec["errors"]
    assert rec["source_sizes"] == {"M": 16, "N": 8}
    assert rec["counts"]["flops"] == 2 * 16 * 64 * 8  # the bound is for the sizes given
    # An IR size parameter (the batch dim export kept symbolic) binds the IR and shrinks the inputs alike.
    rec = bench_problem(str(DATA / "layernorm.py"), _opts(sizes={"params": {"BATCH": 4}}))
    assert rec["status"] == "ok", rec["errors"]
    assert rec["sizes"] == {"BATCH": 4}
    assert rec["counts"]["bytes"]["whole_graph"] == 4 * (4 * 128 * 2 + 2 * 128)  # x, y and the weights


# ---- bounds hold on the host --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def host_records() -> list[dict[str, Any]]:
    out = []
    for name in ("matmul", "conv", "softmax", "layernorm", "mlp", "attention"):
        rec = bench_problem(str(DATA / f"{name}.py"), _opts())
        rec["problem"] = name
        out.append(rec)
    return out


def test_headroom_at_least_one_against_lower_bound_modes(host_records: list[dict[str, Any]]) -> None:
    for rec in host_records:
        assert rec["status"] == "ok", (rec["problem"], rec["errors"])
        eager = rec["measurements"]["eager"]
        assert eager["runs"] >= 3 and eager["min_s"] <= eager["median_s"]
        assert eager["threads"]["torch_intra_op"] == load_target("host").calibration["threads"]
        for mode in LOWER_BOUND_MODES:
            assert rec["headroom"]["host"]["eager"][mode]["min"] >= 1.0, (rec["problem"], mode)
        assert rec["violations"] == []


def test_summary_and_plot(host_records: list[dict[str, Any]], tmp_path: Path) -> None:
    text = render_summary(host_records)
    assert "coverage: 6 problems; translated 6 (100%), bounded 6 (100%), measured 6 (100%)" in text
    assert "violations: 0 in 0 problem(s)" in text
    assert "whole graph" in text
    one = render_problem(host_records[0])
    assert "host SOL" in one and "eager ÷ host SOL" in one
    png = tmp_path / "headroom.png"
    plot_headroom(host_records, str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _beyond_llc(name: str, llc: int) -> dict[str, int]:
    """Sizes at which the program's intermediates (tensors one kernel writes and the next reads) total
    1.25 × the last-level cache."""
    need = 1.25 * llc
    if name == "chain":  # relu's output: N float32
        return {"N": math.ceil(need / 4)}
    if name == "mlp":  # fc1's and gelu's outputs: 2 × batch × hidden float32
        return {"batch": math.ceil(need / (2 * 4 * 128))}
    # attention: the scores, the scaled scores and the softmax, 3 × heads × seq² float32 (batch 1)
    return {"heads": 8, "seq": math.ceil(math.sqrt(need / (3 * 4 * 8)))}


@pytest.mark.parametrize("name", ["chain", "mlp", "attention"])
def test_unfused_holds_when_intermediates_exceed_the_llc(name: str) -> None:
    llc = load_target("host").figures["last_level_cache"].value
    if not llc or llc > 256 << 20:
        pytest.skip("needs a known last-level cache of at most 256 MiB")
    rec = bench_problem(str(DATA / f"{name}.py"), _opts(sizes={"params": _beyond_llc(name, int(llc))}))
    assert rec["status"] == "ok", rec["errors"]
    assert rec["counts"]["intermediate_bytes"] > llc
    assert rec["headroom"]["host"]["eager"]["unfused"]["min"] >= 1.0
    assert rec["violations"] == [] and rec["beats"] == []


def test_a_run_faster_than_a_bound_is_a_violation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A CPU target far slower than this machine: every run beats its bounds, and the exit status says so.
    slow = tmp_path / "slow-cpu.yaml"
    d = yaml.safe_load(Path(load_target("host").origin or "").read_text())
    d.pop("calibration")
    d["name"] = "slow-cpu"
    d["compute"]["fp32_vector"] = {"value": 1e-6, "unit": "GFLOP/s", "source": "user"}
    d["memory"]["dram_bandwidth"] = {"value": 1e-6, "unit": "GB/s", "source": "user"}
    slow.write_text(yaml.safe_dump(d))
    code = cli([str(DATA / "softmax.py"), "--target", str(slow), "--frameworks", "eager", "--budget", "0.05",
                "--warmup", "1", "--device", "cpu", "--no-isolate"])
    out = capsys.readouterr().out
    assert code == 3
    assert "VIOLATION: eager ran in" in out and "below the whole graph bound" in out


# ---- the GPU path --------------------------------------------------------------------------------------


def test_gpu_path_is_skipped_without_cuda(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(problem, "cuda_available", lambda: False)
    rec = bench_problem(str(DATA / "softmax.py"), _opts(device="auto", measure=False))
    assert rec["status"] == "ok" and rec["device"] == {"kind": "cpu"}
    assert "GPU: skipped (no CUDA device)" in rec["notes"]
    code = cli([str(DATA / "softmax.py"), "--device", "cuda", "--no-measure", "--no-isolate"])
    err = capsys.readouterr().err
    assert code == 1
    assert "no CUDA device" in err and "Traceback" not in err


def test_gpu_target_detection_and_precision_policy() -> None:
    assert measure.detect_gpu_target("NVIDIA H100 80GB HBM3") == "h100-sxm"
    assert measure.detect_gpu_target("NVIDIA H100 PCIe") == "h100-pcie"
    assert measure.detect_gpu_target("NVIDIA A100-SXM4-80GB") == "a100"
    assert measure.detect_gpu_target("NVIDIA GeForce RTX 4090") == "rtx-4090"
    assert measure.detect_gpu_target("Some Other GPU") is None
    # PyTorch's defaults run f32 convolutions on TF32: the bound prices f32 contractions at TF32.
    flags = measure.precision_flags()
    assert flags["float32_matmul_precision"] == "highest"
    assert measure.tf32_allowed(flags) == bool(flags["cudnn_allow_tf32"])
    assert not measure.tf32_allowed({"float32_matmul_precision": "highest", "cudnn_allow_tf32": False,
                                     "cuda_matmul_allow_tf32": False})


class _FakeCuda:
    """A stand-in CUDA device for the GPU path's plumbing on a machine without one: events report a fixed
    2 ms per run, and every call is logged, so the order flush → start → run → end can be checked."""

    L2 = 50 * 1024 * 1024

    def __init__(self) -> None:
        self.log: list[str] = []
        fake = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                assert enable_timing  # elapsed_time needs timing events

            def record(self) -> None:
                fake.log.append("record")

            def synchronize(self) -> None:
                fake.log.append("sync")

            def elapsed_time(self, end: Any) -> float:
                return 2.0  # milliseconds, as CUDA reports them

        class Buffer:
            def zero_(self) -> None:
                fake.log.append("flush")

        self.Event = Event
        self.Buffer = Buffer
        self.buffers: list[int] = []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import torch

        props = type("Props", (), {"name": "NVIDIA H100 80GB HBM3", "major": 9, "minor": 0,
                                   "multi_processor_count": 132, "total_memory": 80 << 30,
                                   "L2_cache_size": self.L2, "clock_rate": 1_980_000,
                                   "memory_clock_rate": 2_619_000, "memory_bus_width": 5120})()
        monkeypatch.setattr(problem, "cuda_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
        monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: props)
        monkeypatch.setattr(torch.cuda, "synchronize", lambda: self.log.append("sync"))
        monkeypatch.setattr(torch.cuda, "Event", self.Event)

        def buffer(nbytes: int, device: str) -> Any:
            assert device == "cuda"
            self.buffers.append(nbytes)
            return self.Buffer()

        def place(model: Any, inputs: list[Any], device: str) -> tuple[Any, list[Any]]:
            assert device == "cuda"
            self.log.append("place")

            def run(*args: Any) -> Any:
                self.log.append("run")
                return model(*args)
            return run, inputs

        monkeypatch.setattr(measure, "device_buffer", buffer)
        monkeypatch.setattr(measure, "place", place)


def test_gpu_path_measures_with_cuda_events_against_the_detected_target(monkeypatch: pytest.MonkeyPatch) -> None:
    cuda = _FakeCuda()
    cuda.install(monkeypatch)
    rec = bench_problem(str(DATA / "softmax.py"), _opts(device="cuda", timing={**FAST, "min_runs": 4}))
    assert rec["status"] == "ok", rec["errors"]
    dev = rec["device"]
    assert (dev["kind"], dev["name"], dev["sm_count"], dev["l2_bytes"]) == ("cuda", "NVIDIA H100 80GB HBM3", 132,
                                                                           cuda.L2)
    assert (dev["max_sm_clock_mhz"], dev["max_memory_clock_mhz"]) == (1980.0, 2619.0)
    assert dev["precision"] == measure.precision_flags()
    assert rec["allow_tf32"] == measure.tf32_allowed(dev["precision"])
    # No GPU target was given: the device's name picks h100-sxm, and headroom is judged against it alone.
    assert set(rec["bounds"]) == {"host", "h100-sxm"} and set(rec["headroom"]) == {"h100-sxm"}
    eager = rec["measurements"]["eager"]
    assert eager["device"] == "cuda" and eager["flush_bytes"] == 2 * cuda.L2 == cuda.buffers[0]
    assert eager["median_s"] == eager["min_s"] == 0.002 and eager["runs"] >= 4  # 2 ms from the events
    assert eager["threads"]["precision"] == dev["precision"]
    # Every timed run: the L2 flushed, then the start event, the run, the end event, waited for.
    timed = cuda.log[cuda.log.index("flush"):]
    assert timed[:5] == ["flush", "record", "run", "record", "sync"]
    assert timed.count("flush") == eager["runs"]
    sol = rec["bounds"]["h100-sxm"]["fused"]
    assert rec["headroom"]["h100-sxm"]["eager"]["fused"]["min"] == pytest.approx(0.002 / sol)
    assert rec["violations"] == []


# ---- batch mode ----------------------------------------------------------------------------------------

_OK = """
import torch
N = 8
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn(N, 4)]
def get_init_inputs():
    return []
"""


def _suite(root: Path, extra: dict[str, str]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "ok_a.py").write_text(_OK)
    (root / "sub").mkdir(exist_ok=True)
    (root / "sub" / "ok_b.py").write_text(_OK.replace("relu", "tanh"))
    (root / "helper.py").write_text("X = 1\n")  # no get_inputs: not a problem
    for name, body in extra.items():
        (root / name).write_text(textwrap.dedent(body))


def test_batch_records_failures_and_resumes(tmp_path: Path) -> None:
    root = tmp_path / "suite"
    _suite(root, {
        "fails.py": _OK.replace("torch.relu(x)", "torch.linalg.svd(x)[0]"),  # no lowering for svd
        "crashes.py": "import os\ndef get_inputs():\n    os._exit(7)\nclass Model: pass\n",
    })
    out = tmp_path / "runs.jsonl"
    opts = _opts(measure=False).to_json()
    records = run_batch(str(root), opts, BatchOptions(jobs=2, timeout_s=40), ResultsFile(str(out)), resume=False)
    # A problem that never returns joins the suite; --resume runs it alone, under a limit short enough not to
    # hold a test worker for the full 40 s (it cannot finish, so no limit can pass it falsely).
    (root / "hangs.py").write_text("import time\ndef get_inputs():\n    time.sleep(3600)\nclass Model: pass\n")
    assert [os.path.relpath(p, root) for p in discover(str(root))] == [
        "crashes.py", "fails.py", "hangs.py", "ok_a.py", os.path.join("sub", "ok_b.py")]
    records = run_batch(str(root), opts, BatchOptions(jobs=1, timeout_s=4), ResultsFile(str(out)), resume=True)
    status = {r["problem"]: r["status"] for r in records}
    assert status == {"ok_a.py": "ok", os.path.join("sub", "ok_b.py"): "ok", "fails.py": "error",
                      "hangs.py": "timeout", "crashes.py": "crashed"}
    by = {r["problem"]: r for r in records}
    assert by["fails.py"]["translate"]["ok"] is False and "svd" in by["fails.py"]["errors"][0]["message"]
    assert "exit status 7" in by["crashes.py"]["errors"][0]["message"]
    assert by["ok_a.py"]["bounds"]["host"]["whole_graph"] > 0 and by["ok_a.py"]["violations"] == []
    assert 0 < by["ok_a.py"]["cpu_s"] < by["ok_a.py"]["elapsed_s"] * 64  # the worker's CPU time on it
    lines = out.read_text().splitlines()
    assert len(lines) == 5 and json.loads(lines[-1])["problem"] == "hangs.py"
    cov = coverage(records)
    assert (cov["problems"], cov["translated"], cov["bounded"], cov["timeout"], cov["crashed"]) == (5, 2, 2, 1, 1)

    # An interruption: ok_a's line lost and a torn line at the end. --resume runs only ok_a again.
    kept = [ln for ln in lines if json.loads(ln)["problem"] != "ok_a.py"]
    out.write_text("\n".join(kept) + "\n" + '{"problem": "ok_a.py", "sta')
    again = run_batch(str(root), opts, BatchOptions(jobs=1, timeout_s=40), ResultsFile(str(out)), resume=True)
    assert sorted(r["problem"] for r in again) == sorted(status)
    final = [json.loads(ln) for ln in out.read_text().splitlines()]
    assert [r["problem"] for r in final] == [json.loads(ln)["problem"] for ln in kept] + ["ok_a.py"]
    assert final[-1]["status"] == "ok"


def test_batch_on_a_dask_local_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("distributed")
    root = tmp_path / "suite"
    root.mkdir()
    (root / "ok_a.py").write_text(_OK)
    out = tmp_path / "runs.jsonl"
    code = cli([str(root), "--dask", "local", "--jobs", "1", "--no-measure", "--out", str(out), "--no-progress",
                "--timeout", "120"])
    text = capsys.readouterr().out
    assert code == 0
    rec = json.loads(out.read_text())
    assert rec["problem"] == "ok_a.py" and rec["status"] == "ok" and rec["bounds"]["host"]["fused"] > 0
    assert "coverage: 1 problems; translated 1 (100%), bounded 1 (100%)" in text
    # Resume on Dask: nothing left to run, the file is unchanged.
    before = out.read_text()
    assert cli([str(root), "--dask", "local", "--no-measure", "--out", str(out), "--resume", "--no-progress"]) == 0
    assert out.read_text() == before


# ---- the command line ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("argv", "message"), [
    (["--param", "N"], "bad --param 'N'"),
    (["--scale", "3"], "bad --scale '3'"),
    (["--target", "h10"], "did you mean"),
    (["--frameworks", "eager,fast"], "unknown mode 'fast'"),
    (["--param", "nope=3", "--no-measure"], "neither a size parameter"),
])
def test_cli_errors_are_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli([str(DATA / "softmax.py"), *argv, "--no-isolate"])  # in this process: no process start
    err = capsys.readouterr().err
    assert code == 1 and message in err and "Traceback" not in err


def test_cli_refuses_to_clobber_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "runs.jsonl"
    out.write_text('{"problem": "x.py", "status": "ok"}\n')
    assert cli([str(tmp_path), "--out", str(out), "--no-measure"]) == 1
    assert "exists: --resume continues it" in capsys.readouterr().err
    assert out.read_text() == '{"problem": "x.py", "status": "ok"}\n'


def test_overwrite_replaces_results_only_when_the_batch_ends(tmp_path: Path) -> None:
    out = tmp_path / "runs.jsonl"
    old = '{"problem": "x.py", "status": "ok"}\n'
    out.write_text(old)
    results = ResultsFile(str(out))
    results.open(append=False)
    results.write({"problem": "y.py", "status": "error"})
    assert out.read_text() == old  # a batch killed now leaves the previous file whole
    results.close()
    assert [json.loads(ln)["problem"] for ln in out.read_text().splitlines()] == ["y.py"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.jsonl"]  # no temporary left behind


@pytest.mark.parametrize(("flag", "path", "message"), [
    ("--plot", "missing/h.png", "no such directory"),
    ("--plot", "h.docx", "unknown image format '.docx'"),
    ("--out", "missing/runs.jsonl", "no such directory"),
])
def test_output_paths_are_checked_before_any_work(flag: str, path: str, message: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code = cli([str(tmp_path), flag, str(tmp_path / path), "--no-measure"])
    err = capsys.readouterr().err
    assert code == 1 and message in err and "Traceback" not in err


# ---- other inputs and framework modes ------------------------------------------------------------------


def test_a_sir_with_its_source(tmp_path: Path) -> None:
    from solar.tools.solar_translate import main as translate

    sir = tmp_path / "layernorm.sir"
    assert translate([str(DATA / "layernorm.py"), "--no-validate", "-o", str(sir)]) == 0
    # The batch dimension's size parameter is named after the source's global `rows` (docs/sweeps.md).
    rec = bench_problem(str(sir), _opts(source=str(DATA / "layernorm.py"), sizes={"params": {"ROWS": 8}}))
    assert rec["status"] == "ok", rec["errors"]
    assert rec["sizes"] == {"ROWS": 8}
    assert rec["counts"]["bytes"]["whole_graph"] == 4 * (8 * 128 * 2 + 2 * 128)
    assert rec["headroom"]["host"]["eager"]["whole_graph"]["min"] >= 1.0
    # The IR fixes the sizes that are not its parameters: asking to change one is an error, not a mismatch.
    rec = bench_problem(str(sir), _opts(source=str(DATA / "layernorm.py"), sizes={"params": {"dim": 64}}))
    assert rec["status"] == "error" and "not a size parameter" in rec["errors"][0]["message"]


def test_a_sir_translated_from_jax_with_its_source(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    from solar.tools.solar_translate import main as translate

    src = tmp_path / "proj.py"
    src.write_text(textwrap.dedent("""
        import jax.numpy as jnp
        import numpy as np
        W = np.linspace(-1, 1, 4 * 3, dtype=np.float32).reshape(4, 3)  # closed over: a constant of the jaxpr
        def forward(x):
            return jnp.tanh(x @ W)
        def get_inputs():
            return [np.ones((8, 4), np.float32)]
    """))
    sir = tmp_path / "proj.sir"
    assert translate([str(src), "--framework", "jax", "--no-validate", "-o", str(sir)]) == 0
    assert "= input 0" in sir.read_text() and "= constant 0" in sir.read_text()
    rec = bench_problem(str(sir), _opts(source=str(src), frameworks=["jit"]))
    assert rec["status"] == "ok" and rec["framework"] == "jax", rec["errors"]
    assert rec["counts"]["flops"] == 2 * 8 * 4 * 3 + 8 * 3  # the matmul's multiply-adds and one tanh each
    assert rec["counts"]["bytes"]["whole_graph"] == 4 * (8 * 4 + 4 * 3 + 8 * 3)  # x, the constant W, the output
    for mode in LOWER_BOUND_MODES:
        assert rec["headroom"]["host"]["jit"][mode]["min"] >= 1.0
    rec = bench_problem(str(sir), _opts(source=str(DATA / "softmax.py"), frameworks=["eager"]))
    assert rec["status"] == "error"  # a PyTorch source for the JAX IR: the shapes or the header disagree


def test_jax_jit_is_measured() -> None:
    pytest.importorskip("jax")
    corpus = Path(__file__).parents[1] / "frontend_corpus" / "jax" / "softmax.py"
    rec = bench_problem(str(corpus), _opts(frameworks=["eager", "compile", "jit"]))
    assert rec["status"] == "ok" and rec["framework"] == "jax", rec["errors"]
    assert list(rec["measurements"]) == ["jit"]
    for mode in LOWER_BOUND_MODES:
        assert rec["headroom"]["host"]["jit"][mode]["min"] >= 1.0


def test_compile_is_skipped_without_a_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(measure, "cxx_compiler", lambda: None)
    rec = bench_problem(str(DATA / "softmax.py"), _opts(frameworks=["eager", "compile"]))
    assert rec["status"] == "ok"
    assert rec["measurements"]["compile"]["skipped"].startswith("no C++ compiler found")
    assert any(n.startswith("compile: skipped (no C++ compiler") for n in rec["notes"])
    assert rec["measurements"]["eager"]["min_s"] > 0 and "compile" not in rec["headroom"]["host"]
