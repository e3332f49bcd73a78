"""One problem, as `solar-bench FILE` runs it: in a measuring process of its own, so that a problem that kills
the process (a segfault in a framework or an extension, an abort, `os._exit`) is a record, status `crashed`,
and one line naming the signal and the stage, instead of solar-bench dying without a word (docs/bench.md).

The measuring process is a fresh interpreter (`python -m solar.bench.single`), never a fork: forking a
process that holds torch's thread pools can deadlock the child. It inherits stdin, stdout and stderr (a
`breakpoint()` in forward works), sees the parent's `sys.path`, dies with its parent (parent_watch.py), and
sends back on a pipe one JSON line per stage as it begins and, at the end, the outcome. The parent never
imports torch, so the isolation costs one interpreter start and SOLAR's own imports again, not torch's.
`isolate=False` (`--no-isolate`) runs the problem in this process, for a profiler that does not follow
children; a crash then ends solar-bench without a record.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import select
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

from solar.ir.outputs import OutputError
from solar.ir.startup import bulk_imports

from .options import RECORD_VERSION, BenchOptions
from .parent_watch import die_with_parent, end_group

# What the problem was doing in each stage of bench_problem, for the line that says where it crashed.
STAGE_DOING = {"load": "loading it", "translate": "translating it (running its forward)",
               "bounds": "computing its bounds", "measure": "measuring it (running its forward)"}
STOP_GRACE_S = 5.0  # after Ctrl-C, how long the measuring process has to end before it is killed


@dataclass
class Outcome:
    """A problem's record, and what became of its HTML report when one was asked for."""

    record: dict[str, Any]
    text: str = ""  # what the terminal shows of the record (the tables); "" for a crash
    report_error: str | None = None  # the page could not be written: one error line, exit status 1
    report_note: str | None = None  # why no page was written (the problem failed before its bounds)


def bench_one(path: str, opts: BenchOptions, report: str | None, command: str,
              on_stage: Callable[[str], None] = lambda stage: None) -> Outcome:
    """The problem in this process: its record, its tables and, when `report` is given, its HTML report."""
    # Imported here, not above: solar-bench's own process imports this module, and needs neither the
    # frontends nor the passes when the problem runs in a measuring process.
    from .html import render_measured_lines, write_bench_report
    from .problem import bench_problem
    from .summary import render_problem

    kept: list[Any] = []
    rec = bench_problem(path, opts, keep=kept if report else None, on_stage=on_stage)
    text = render_problem(rec) + (render_measured_lines(rec) if rec.get("source_lines") else "")
    if not report:
        return Outcome(rec, text)
    if not (kept and rec["status"] == "ok"):
        return Outcome(rec, text, report_note="no HTML report: the problem failed before its bounds")
    try:
        write_bench_report(report, path, kept[0], rec, opts.targets, command)
    except OutputError as err:
        return Outcome(rec, text, report_error=str(err))
    except Exception as err:  # the record stands; only the page is missing
        return Outcome(rec, text, report_error=f"the HTML report: {type(err).__name__}: {err}")
    return Outcome(rec, text)


def bench_isolated(path: str, opts: BenchOptions, report: str | None, command: str,
                   timeout_s: float | None = None) -> Outcome:
    """`bench_one` in a measuring process of its own; its death is a `crashed` record naming the stage. With
    `timeout_s`, a problem that has not finished that long after it started (it hangs, or was stopped) is
    killed, with every process it started, and is a `timeout` record."""
    task = json.dumps({"path": path, "opts": opts.to_json(), "report": report, "command": command,
                       "sys_path": sys.path})
    read_end, write_end = os.pipe()
    start = time.perf_counter()
    try:
        # -P: the child's sys.path is the parent's (sent in the task), not the current directory first. A
        # session of its own: the processes the problem starts are in its group, which ends with it.
        proc = subprocess.Popen([sys.executable, "-P", "-m", "solar.bench.single", str(write_end)],
                                env={**os.environ, _TASK_ENV: task}, pass_fds=(write_end,), start_new_session=True)
    except BaseException:
        os.close(read_end)
        os.close(write_end)
        raise
    os.close(write_end)
    messages = _Messages(read_end)
    try:
        for msg in messages.read(timeout_s):
            if "stage" in msg:
                messages.stage = str(msg["stage"])
            elif "outcome" in msg:
                messages.outcome = Outcome(**msg["outcome"])
            elif "internal" in msg:
                messages.internal = str(msg["internal"])
        if not messages.timed_out:  # the pipe is closed: the process exits (or is past its time)
            messages.timed_out = not _exits_by(proc, messages.deadline)
    except BaseException:  # Ctrl-C reaches our process group only: the problem's gets it from us
        _stop(proc)
        raise
    finally:
        os.close(read_end)
        end_group(proc.pid)  # whatever the problem started, and the process itself after a timeout
    code = proc.wait()
    elapsed = time.perf_counter() - start
    if messages.outcome is not None:  # the record came back; a crash at the child's exit does not undo it
        return messages.outcome
    if messages.internal is not None:
        raise MeasuringProcessError(messages.internal)
    if messages.timed_out:
        assert timeout_s is not None
        return Outcome(timeout_record(path, messages.stage or "load", timeout_s, elapsed))
    if messages.stage is None:
        raise MeasuringProcessError(f"the measuring process exited with status {code} before it started the "
                                    "problem")
    return Outcome(crashed_record(path, messages.stage, code, elapsed))


class _Messages:
    """The measuring process's JSON lines, as they come, and what they said."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.stage: str | None = None  # None until the child starts the problem
        self.outcome: Outcome | None = None
        self.internal: str | None = None
        self.timed_out = False
        self.deadline: float | None = None  # monotonic; set when the problem starts, with a timeout

    def read(self, timeout_s: float | None) -> Iterator[dict[str, Any]]:
        """Every message until the child closes the pipe, or until `timeout_s` after it started the problem
        (then `timed_out`); the clock starts with the problem, not with the interpreter and its imports."""
        pending = b""
        poller = select.poll()  # not select.select: a notebook's process may hold fds past FD_SETSIZE
        poller.register(self.fd, select.POLLIN)
        while True:
            if self.deadline is None and timeout_s is not None and self.stage is not None:
                self.deadline = time.monotonic() + timeout_s
            left = None if self.deadline is None else self.deadline - time.monotonic()
            if left is not None and left <= 0:
                self.timed_out = True
                return
            if not poller.poll(None if left is None else max(1, math.ceil(left * 1000))):
                continue
            chunk = os.read(self.fd, 1 << 16)
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                yield _message(line.decode("utf-8", errors="replace"))
            if not chunk:
                return


def timeout_record(path: str, stage: str, timeout_s: float, elapsed_s: float) -> dict[str, Any]:
    """The record of a problem that had not finished `timeout_s` after it started (in `stage`), and was killed."""
    message = f"no result within {timeout_s:g} s: killed while {STAGE_DOING.get(stage, stage)}"
    return {"version": RECORD_VERSION, "problem": path, "status": "timeout", "errors": [{"stage": stage,
            "message": message}], "violations": [], "beats": [], "notes": [], "elapsed_s": round(elapsed_s, 3)}


class MeasuringProcessError(RuntimeError):
    """SOLAR failed in the measuring process (not the problem): an internal error, exit status 2."""


def crashed_record(path: str, stage: str, code: int, elapsed_s: float) -> dict[str, Any]:
    """The record of a problem whose measuring process died in `stage` with exit status `code` (negative:
    killed by that signal) before sending its record."""
    doing = STAGE_DOING.get(stage, stage)
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "an unknown signal"
        message = f"the problem crashed the measuring process (signal {-code}, {name}) while {doing}"
    else:
        message = (f"the problem ended the measuring process (exit status {code}) while {doing}: a problem "
                   "must return, not exit")
    return {"version": RECORD_VERSION, "problem": path, "status": "crashed", "errors": [{"stage": stage,
            "message": message}], "violations": [], "beats": [], "notes": [], "elapsed_s": round(elapsed_s, 3)}


_TASK_ENV = "SOLAR_BENCH_SINGLE_TASK"  # the task travels in the environment: stdin stays the user's


def _message(line: str) -> dict[str, Any]:
    try:
        msg = json.loads(line)
    except ValueError:  # a line torn by the child's death
        return {}
    return msg if isinstance(msg, dict) else {}


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """After Ctrl-C: the problem gets it too (it ends as it would at the terminal), within a grace period."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGINT)
    _exits_by(proc, time.monotonic() + STOP_GRACE_S)


def _exits_by(proc: subprocess.Popen[bytes], deadline: float | None) -> bool:
    """Waits until the process exits (left unreaped, so that its pid still names its group) or the deadline
    passes (None: no deadline); whether it exited."""
    if deadline is None:
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        return True
    while os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is None:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def _import_frameworks() -> None:
    """PyTorch and the frontend, imported before the problem starts: like a pool worker's, outside the
    problem's time limit (the problem's first stage asks whether CUDA is there, which imports torch anyway)."""
    with bulk_imports(), contextlib.suppress(ImportError):
        import torch  # noqa: F401

        import solar.frontends.torch_export  # noqa: F401


def main() -> None:
    """The measuring process: the task from the environment, stages and the outcome to the pipe in argv[1]."""
    die_with_parent()
    if not os.environ.get("SOLAR_DEBUG"):
        import faulthandler

        faulthandler.disable()  # a crash is the parent's one line, not a dump of every thread's stack
    task = json.loads(os.environ.pop(_TASK_ENV))
    sys.path[:] = task["sys_path"]
    _import_frameworks()
    os.set_inheritable(int(sys.argv[1]), False)  # a process the problem starts must not hold the pipe open
    pipe = os.fdopen(int(sys.argv[1]), "w", encoding="utf-8")

    def send(msg: dict[str, Any]) -> None:
        pipe.write(json.dumps(msg) + "\n")
        pipe.flush()

    try:
        outcome = bench_one(task["path"], BenchOptions.from_json(task["opts"]), task["report"], task["command"],
                            on_stage=lambda stage: send({"stage": stage}))
        send({"outcome": asdict(outcome)})
    except KeyboardInterrupt:  # Ctrl-C, sent on by the parent: the parent says so
        os._exit(130)
    except Exception as err:  # SOLAR's own failure, outside the record: the parent's internal error
        if os.environ.get("SOLAR_DEBUG"):
            traceback.print_exc()
        send({"internal": f"{type(err).__name__}: {err}"})
        os._exit(2)
    pipe.close()


if __name__ == "__main__":
    main()
