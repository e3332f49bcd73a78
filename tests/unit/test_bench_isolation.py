"""solar-bench's processes against problems that kill them, and against solar-bench being killed (issue 28):
one problem that segfaults or exits is a record and one line; a batch killed by SIGKILL leaves no worker
running on orphaned; a batch stopped by SIGTERM leaves no temporary file and the old results whole.

No timed assertions: every wait polls with a generous limit, which only a broken build reaches."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

pytest.importorskip("torch")

from solar.bench.options import BenchOptions
from solar.bench.single import MeasuringProcessError, bench_isolated, crashed_record
from solar.bench.worker import run_isolated
from solar.tools.solar_bench import run as cli

PROBLEM = """
import os, signal, sys
import torch
{top}
class Model(torch.nn.Module):
    def forward(self, x):
        {forward}
        return x * 2.0

def get_inputs():
    return [torch.randn(4, 8)]

def get_init_inputs():
    return []
"""
WAIT_S = 300.0  # a generous limit for a process to start (torch's import on a loaded machine) or to end


def _write(folder: Path, name: str, forward: str, top: str = "") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(PROBLEM.format(top=top, forward=forward)))
    return path


def _poll(what: str, done: Callable[[], bool], limit_s: float = WAIT_S) -> None:
    end = time.monotonic() + limit_s
    while not done():
        if time.monotonic() > end:
            pytest.fail(f"still waiting after {limit_s:g} s: {what}")
        time.sleep(0.2)


# ---- one problem: a crash of the measuring process ---------------------------------------------------------


SEGFAULT_LINE = ("translate: the problem crashed the measuring process (signal 11, SIGSEGV) while translating "
                 "it (running its forward)")
EXIT_LINE = ("translate: the problem ended the measuring process (exit status 0) while translating it (running "
             "its forward): a problem must return, not exit")


def test_a_problem_that_segfaults_is_a_record_one_line_and_exit_1(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "p.py", "os.kill(os.getpid(), signal.SIGSEGV)")
    out = tmp_path / "r.json"
    assert cli([str(path), "--no-measure", "--json", str(out)]) == 1
    captured = capfd.readouterr()  # the measuring process's output too: no traceback, no stack dump
    assert captured.err == f"solar-bench: error: {SEGFAULT_LINE}\n"
    assert captured.out == ""
    rec = json.loads(out.read_text())
    assert rec["status"] == "crashed"
    assert rec["errors"] == [{"stage": "translate", "message": SEGFAULT_LINE.removeprefix("translate: ")}]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.py", "r.json"]


_PROBE = """
import json, sys
from solar.tools.solar_bench import run
code = run({argv!r})
print(json.dumps({{"code": code, "modules": sorted(sys.modules)}}))
"""


def test_a_problem_that_exits_is_one_line_and_solar_bench_itself_imports_no_torch(tmp_path: Path) -> None:
    # The whole command, as a user runs it: its own process never imports torch or the frontends (that is
    # what keeps the measuring process cheap), and os._exit(0) in forward is exit 1 with one line.
    path = _write(tmp_path, "p.py", "os._exit(0)")
    proc = subprocess.run([sys.executable, "-c", _PROBE.format(argv=[str(path), "--no-measure"])],
                          capture_output=True, text=True, check=True)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["code"] == 1
    assert proc.stderr == f"solar-bench: error: {EXIT_LINE}\n"
    heavy = [m for m in result["modules"] if m.split(".")[0] == "torch" or m.startswith("solar.frontends")
             or m == "solar.bench.problem"]
    assert heavy == []


def test_sys_exit_in_forward_is_one_line_and_exit_1(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # SystemExit is caught in the record either way; --no-isolate spares a process start (and is tested so).
    path = _write(tmp_path, "p.py", "sys.exit(0)")
    assert cli([str(path), "--no-measure", "--no-isolate"]) == 1
    assert capfd.readouterr().err == ("solar-bench: error: translate: the program called sys.exit(0) (a problem "
                                      "must return, not exit)\n")
    assert cli([str(tmp_path), "--no-measure", "--no-isolate"]) == 1
    assert "--no-isolate is for one problem" in capfd.readouterr().err


def test_the_line_names_the_stage_and_the_signal() -> None:
    rec = crashed_record("p.py", "measure", -signal.SIGABRT, 1.0)
    assert rec["status"] == "crashed"
    assert rec["errors"] == [{"stage": "measure", "message": "the problem crashed the measuring process "
                              "(signal 6, SIGABRT) while measuring it (running its forward)"}]
    assert crashed_record("p.py", "bounds", 3, 1.0)["errors"][0]["message"] == (
        "the problem ended the measuring process (exit status 3) while computing its bounds: a problem must "
        "return, not exit")


def test_a_measuring_process_that_never_starts_the_problem_is_an_internal_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Not the problem's fault (a broken installation), so not a `crashed` record of it.
    monkeypatch.setattr(sys, "executable", "/bin/false")
    with pytest.raises(MeasuringProcessError, match="exited with status 1 before it started the problem"):
        bench_isolated(str(_write(tmp_path, "p.py", "pass")), BenchOptions(), None, "")


# ---- a batch killed from outside ---------------------------------------------------------------------------


def _hanging_suite(tmp_path: Path, count: int) -> tuple[Path, list[Path]]:
    """Problems that say they started (a file at import, in the worker), then spin in forward."""
    root = tmp_path / "suite"
    root.mkdir()
    marks = [tmp_path / f"started{k}" for k in range(count)]
    for k, mark in enumerate(marks):
        _write(root, f"hang{k}.py", "while True: pass", top=f"open({str(mark)!r}, 'w').close()")
    return root, marks


def _start_batch(root: Path, out: Path, jobs: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "solar.tools.solar_bench", str(root), "--no-measure",
                             "--no-progress", "--jobs", str(jobs), "--timeout", "3600", "--out", str(out),
                             "--overwrite"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _gone(procs: list[psutil.Process]) -> Callable[[], bool]:
    return lambda: not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in procs)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_sigkill_of_the_batch_leaves_no_worker_running(tmp_path: Path) -> None:
    root, marks = _hanging_suite(tmp_path, 2)
    batch = _start_batch(root, tmp_path / "r.jsonl", jobs=2)
    try:
        _poll("both workers inside their hanging problem", lambda: all(m.exists() for m in marks))
        workers = psutil.Process(batch.pid).children(recursive=True)
        assert workers, "the batch has no worker processes"
        batch.send_signal(signal.SIGKILL)
        batch.wait()
        _poll("the workers of a killed batch to exit", _gone(workers), limit_s=60)
    finally:
        for p in psutil.Process().children(recursive=True):
            p.kill()


def test_sigterm_of_the_batch_keeps_the_old_results_and_leaves_no_temporary(tmp_path: Path) -> None:
    root, marks = _hanging_suite(tmp_path, 1)
    out = tmp_path / "r.jsonl"
    old = json.dumps({"version": 1, "problem": "old.py", "status": "ok", "errors": [], "violations": [],
                      "beats": [], "notes": []}) + "\n"
    out.write_text(old)
    batch = _start_batch(root, out, jobs=1)
    try:
        _poll("the worker inside its hanging problem", marks[0].exists)
        workers = psutil.Process(batch.pid).children(recursive=True)
        assert [p.name for p in tmp_path.glob(".r.*.tmp.jsonl")], "the batch writes into a temporary file"
        batch.send_signal(signal.SIGTERM)
        _, err = batch.communicate(timeout=WAIT_S)
        assert batch.returncode == 128 + signal.SIGTERM
        assert b"Traceback" not in err
        _poll("the workers of a stopped batch to exit", _gone(workers), limit_s=60)
    finally:
        for p in psutil.Process().children(recursive=True):
            p.kill()
    assert out.read_text() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.jsonl", "started0", "suite"]
    assert os.stat(out).st_size == len(old)


# ---- a problem that hangs, stops, or leaves processes running (issue 36) ------------------------------------


def _spawning(folder: Path, name: str, then: str) -> tuple[Path, Path]:
    """A problem that starts a `sleep` (its pid in a file beside it) at import, then does `then`."""
    pid_file = folder / f"{name}.child"
    path = folder / f"{name}.py"
    path.write_text(f"import os, signal, subprocess, time\nchild = subprocess.Popen(['sleep', '300'])\n"
                    f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n{then}\n")
    return path, pid_file


def _child_gone(pid_file: Path) -> None:
    assert pid_file.exists(), "the problem never started its child"
    pid = int(pid_file.read_text())

    def gone() -> bool:
        try:
            return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    _poll("the problem's child to be killed", gone, limit_s=60)


TIMEOUT_LINE = ("solar-bench: error: translate: no result within 1 s: killed while translating it (running its "
                "forward)\n")


def test_a_hanging_problem_and_its_child_are_killed_at_the_timeout(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    path, pid_file = _spawning(tmp_path, "hang", "time.sleep(300)")
    out = tmp_path / "r.json"
    assert cli([str(path), "--no-measure", "--timeout", "1", "--json", str(out)]) == 1
    assert capfd.readouterr().err == TIMEOUT_LINE
    rec = json.loads(out.read_text())
    assert (rec["status"], rec["errors"][0]["stage"]) == ("timeout", "translate")
    _child_gone(pid_file)


def test_a_stopped_problem_is_killed_at_the_timeout(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "p.py", "pass", top="os.kill(os.getpid(), signal.SIGSTOP)")
    assert cli([str(path), "--no-measure", "--timeout", "1"]) == 1
    assert capfd.readouterr().err == TIMEOUT_LINE
    assert cli([str(path), "--no-measure", "--timeout", "1", "--no-isolate"]) == 1  # no process to kill: refused
    assert "--timeout needs the measuring process" in capfd.readouterr().err


def test_processes_a_finished_problem_left_running_end_with_it(tmp_path: Path) -> None:
    # Not a problem file: the problem fails at once, and its `sleep` must not outlive it, in a measuring
    # process or in a Dask task's process (whose pipes the `sleep` must not hold open either).
    path, pid_file = _spawning(tmp_path, "leaves", "")
    outcome = bench_isolated(str(path), BenchOptions(measure=False), None, "")
    assert outcome.record["status"] == "error"
    _child_gone(pid_file)
    pid_file.unlink()
    rec = run_isolated("leaves.py", str(path), BenchOptions(measure=False).to_json(), WAIT_S)
    assert rec["status"] == "error"
    assert "not a problem file" in rec["errors"][0]["message"]
    _child_gone(pid_file)


def test_a_batch_kills_a_hanging_problem_and_its_child_at_the_timeout(tmp_path: Path) -> None:
    root = tmp_path / "suite"
    root.mkdir()
    _, pid_file = _spawning(root, "hang", "time.sleep(300)\ndef get_inputs(): return []")
    out = tmp_path / "r.jsonl"
    assert cli([str(root), "--no-measure", "--no-progress", "--timeout", "1", "--out", str(out)]) == 0
    rec = json.loads(out.read_text())
    assert (rec["problem"], rec["status"]) == ("hang.py", "timeout")
    _child_gone(pid_file)
