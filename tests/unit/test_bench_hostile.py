"""solar-bench against a hostile user (issue 28, item 4): results files that survive failed batches and odd
--resume files, locked results, Dask addresses, discovery of FIFOs and links to devices, worker hygiene
(state between problems, Ctrl-C, sys.exit), zero-size inputs, repeated flags. Small and fast: no timing."""

from __future__ import annotations

import json
import os
import re
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

from solar.bench.batch import BatchError, ResultsFile, discover
from solar.bench.isolation import TorchState
from solar.bench.problem import BenchOptions, bench_problem
from solar.tools.solar_bench import run as cli

DATA = Path(__file__).parent / "data" / "bench"
RECORD = {"version": 1, "problem": "a.py", "status": "ok", "errors": [], "violations": [], "beats": [],
          "notes": []}


def test_a_whole_last_record_without_its_newline_is_kept(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    out.write_text(json.dumps(RECORD))
    assert list(ResultsFile(str(out)).done()) == ["a.py"]
    assert out.read_text() == json.dumps(RECORD) + "\n"
    out.write_text(json.dumps(RECORD) + "\n" + '{"problem": "b.py", "sta')  # torn: dropped
    assert list(ResultsFile(str(out)).done()) == ["a.py"]
    assert out.read_text() == json.dumps(RECORD) + "\n"


def test_lines_that_are_json_but_not_records_are_skipped(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    lines = [{**RECORD, "problem": ["a"]}, [1, 2], "text", {"status": "ok"}, RECORD]
    out.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert list(ResultsFile(str(out)).done()) == ["a.py"]


BEAT = {"target": "host", "framework_mode": "eager", "mode": "fused", "measured_s": 1.0, "bound_s": 2.0, "why": "w"}


@pytest.mark.parametrize("fields, message", [
    ({"errors": "x"}, "'errors' is str, not list"),
    ({"violations": [1]}, "'violations[0]' is int, not an object"),
    ({"violations": [{"mode": "fused"}]}, "'violations[0]' has no target (a string)"),
    ({"beats": [{**BEAT, "bound_s": "2"}]}, "'beats[0]' has no bound_s (seconds)"),
    ({"headroom": {"host": {"eager": {"fused": 2.0}}}}, "'headroom.host.eager.fused' is not a {median, min} pair"),
    ({"headroom": {"host": []}}, "'headroom.host' is not a {median, min} pair"),
    ({"measurements": {"eager": {"min_s": "fast"}}}, "'measurements.eager.min_s' is str, not seconds"),
    ({"noisy": "no"}, "'noisy' is str, not bool"),
])
def test_a_malformed_record_is_one_line_naming_it_and_the_file_is_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], fields: dict, message: str) -> None:
    out = tmp_path / "r.jsonl"
    text = json.dumps({**RECORD, "problem": "b.py", "violations": [BEAT]}) + "\n" + json.dumps({**RECORD, **fields})
    out.write_text(text)  # the malformed record is the last line, without its newline: nothing is repaired
    with pytest.raises(BatchError, match=f"r.jsonl:2: the record of a.py is malformed: {re.escape(message)}"):
        ResultsFile(str(out)).done()
    assert out.read_text() == text
    root = _problem_dir(tmp_path)
    assert cli([str(root), "--out", str(out), "--resume", "--no-measure", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("solar-bench: error: ") and err.count("\n") == 1 and message in err
    assert out.read_text() == text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.jsonl", "suite"]


def test_a_failed_batch_leaves_the_old_results_and_no_temporary_file(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    out.write_text(json.dumps(RECORD) + "\n")
    results = ResultsFile(str(out))
    results.open(append=False)
    results.close(commit=False)
    assert out.read_text() == json.dumps(RECORD) + "\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.jsonl"]


def test_two_batches_on_one_results_file_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    out.write_text(json.dumps(RECORD) + "\n")
    first = ResultsFile(str(out))
    first.lock()
    with pytest.raises(BatchError, match="being written by another solar-bench batch"):
        ResultsFile(str(out)).lock()
    first.close()
    second = ResultsFile(str(out))
    second.lock()  # free again
    second.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.jsonl"]  # the lock file goes with the batch


def test_the_lock_holds_before_the_results_exist_and_after_they_are_replaced(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.jsonl"
    first = ResultsFile(str(out))
    first.lock()  # a new batch: no results file yet
    with pytest.raises(BatchError, match="being written by another solar-bench batch"):
        ResultsFile(str(out)).lock()
    out.write_text(json.dumps(RECORD))  # written, then repaired by --resume (the file is replaced)
    assert list(first.done()) == ["a.py"]
    root = _problem_dir(tmp_path)
    assert cli([str(root), "--out", str(out), "--resume", "--no-measure", "--no-progress"]) == 1
    assert capsys.readouterr().err == (f"solar-bench: error: {out} is being written by another solar-bench batch: "
                                       "wait for it, or give another --out\n")
    assert out.read_text() == json.dumps(RECORD) + "\n"
    first.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.jsonl", "suite"]


def _problem_dir(tmp_path: Path) -> Path:
    root = tmp_path / "suite"
    root.mkdir()
    (root / "mm.py").write_text((DATA / "matmul.py").read_text())
    return root


def test_an_unreachable_or_malformed_dask_address_is_one_line_and_keeps_the_old_results(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("distributed")
    root = _problem_dir(tmp_path)
    out = tmp_path / "r.jsonl"
    out.write_text(json.dumps(RECORD) + "\n")
    assert cli([str(root), "--dask", "not a url", "--no-measure", "--out", str(out), "--overwrite",
                "--no-progress"]) == 1
    assert "--dask 'not a url': give a scheduler address" in capsys.readouterr().err
    assert cli([str(root), "--dask", "tcp://127.0.0.1:1", "--no-measure", "--out", str(out), "--overwrite",
                "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("solar-bench: error: --dask tcp://127.0.0.1:1: cannot reach the scheduler")
    assert out.read_text() == json.dumps(RECORD) + "\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.jsonl", "suite"]


def test_discovery_skips_fifos_and_links_to_devices(tmp_path: Path) -> None:
    root = _problem_dir(tmp_path)
    os.mkfifo(root / "fifo.py")
    (root / "zero.py").symlink_to("/dev/zero")
    assert [os.path.basename(p) for p in discover(str(root))] == ["mm.py"]


@pytest.mark.parametrize("argv, message", [
    (["--param", "M=4", "--param", "M=8"], "--param M is given twice (4 and 8)"),
    (["--scale", "0.5", "--scale", "0.25"], "--scale is given 2 times"),
    (["--param", "M=" + "9" * 30], "positive integer V below 2^63"),
    (["--frameworks", ",,"], "--frameworks: give at least one mode"),
])
def test_ambiguous_or_empty_flags_are_usage_errors(argv: list[str], message: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert cli([str(DATA / "matmul.py"), "--no-measure", *argv]) == 1
    assert message in capsys.readouterr().err


def _write(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


PROBLEM = """
import torch
{top}
class Model(torch.nn.Module):
    def forward(self, x):
        {forward}
        return x * 2.0

def get_inputs():
    return [torch.randn({shape})]

def get_init_inputs():
    return []
"""


def test_sys_exit_and_base_exceptions_in_a_problem_are_recorded(tmp_path: Path) -> None:
    opts = BenchOptions(targets=["host"], frameworks=["eager"], measure=False, device="cpu")
    for forward, message in (("import sys; sys.exit(0)", "the program called sys.exit(0)"),
                             ("raise BaseException('boom')", "BaseException: boom")):
        path = _write(tmp_path, "p.py", PROBLEM.format(top="", forward=forward, shape="4, 8"))
        rec = bench_problem(path, opts)
        assert rec["status"] == "error" and message in rec["errors"][0]["message"], rec["errors"]


def test_zero_size_inputs_are_a_size_error(tmp_path: Path) -> None:
    path = _write(tmp_path, "z.py", PROBLEM.format(top="", forward="pass", shape="0, 8"))
    rec = bench_problem(path, BenchOptions(targets=["host"], measure=False, device="cpu"))
    assert rec["status"] == "error"
    assert "input 0 a zero-size dimension (shape (0, 8))" in rec["errors"][0]["message"]


def test_frameworks_that_do_not_apply_are_a_failed_measurement(tmp_path: Path) -> None:
    rec = bench_problem(str(DATA / "matmul.py"), BenchOptions(targets=["host"], frameworks=["jit"], device="cpu"))
    assert rec["status"] == "error"
    assert rec["errors"][-1]["message"] == ("no mode of --frameworks jit applies to a torch program "
                                             "(eager, compile)")


def test_torch_settings_a_problem_changes_are_put_back() -> None:
    import torch

    state = TorchState.capture()
    try:
        torch.set_default_dtype(torch.float64)
        torch.set_grad_enabled(False)
        assert state.clean_after()
        assert torch.get_default_dtype() == torch.float32 and torch.is_grad_enabled()
    finally:
        state.restore()
