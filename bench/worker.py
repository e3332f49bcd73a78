"""Where a problem runs: in a pool process that the batch runner can kill (`serve`), or alone in a fresh
process (`python -m solar.bench.worker`, JSON in on stdin, the record out on stdout), which is how Dask
workers run problems so that a crash or a hang never takes a Dask worker down."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from multiprocessing.connection import Connection
from typing import Any

from solar.ir.startup import bulk_imports, exit_now

from .isolation import TorchState, detach_worker
from .parent_watch import end_group
from .problem import RECORD_VERSION, BenchOptions, bench_problem

_MARK = "@@solar-bench-record@@ "
READY = "ready"  # what a pool worker sends once its imports are done


def serve(conn: Connection) -> None:
    """A pool worker: problems in, records out, until told to stop (None). Each problem starts from the
    settings the first one found; a worker whose settings cannot be put back exits after its record and is
    replaced (bench/isolation.py)."""
    detach_worker()
    _quiet_logs()
    # Imported before the first problem, outside its time limit: torch, torch.export and dynamo (which
    # torch.export loads on first use), the frontends; without the cyclic GC, then frozen (solar/ir/startup.py).
    with bulk_imports():
        import torch
        import torch._dynamo
        import torch.export

        import solar.frontends.torch_export  # noqa: F401

        del torch
    warm_up()
    state = TorchState.capture()
    conn.send(READY)
    while True:
        task = conn.recv()
        if task is None:
            return
        key, path, opts = task
        cpu = time.process_time()
        try:
            rec = bench_problem(path, BenchOptions.from_json(opts))
        except KeyboardInterrupt:  # SIGINT is ignored here, so the problem raised it
            rec = failed_record(key, "error", "the program raised KeyboardInterrupt", 0.0)
        rec["problem"] = key
        rec["cpu_s"] = round(time.process_time() - cpu, 3)  # this worker's CPU time (every thread) on it
        conn.send(rec)
        if not state.clean_after():
            return


def warm_up() -> None:
    """Runs one tiny program through torch.export, the lowering and the SOL pipeline, so that what they
    set up on first use (dynamo's tables, the passes and backends imported on demand, the target index) is
    paid once per worker, before its first problem's time limit starts. A warm-up that fails costs nothing
    but the time: the problems then pay for it as before."""
    import torch

    from solar.frontends.torch_export import TorchProblem, translate_problem
    from solar.targets.loader import load_target

    from .bounds import compute_bounds

    with contextlib.suppress(Exception):
        problem = TorchProblem(lambda: torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()),
                               lambda: [torch.rand(4, 8)], "warm_up")
        tr = translate_problem(problem)
        compute_bounds(tr.module, [load_target("h100")], {p.name: int(p.default or 4) for p in tr.module.params})


def failed_record(key: str, status: str, message: str, elapsed: float) -> dict[str, Any]:
    """The record of a problem whose process hung (timeout) or died (crashed)."""
    return {"version": RECORD_VERSION, "problem": key, "status": status, "errors": [{"stage": "run",
            "message": message}], "violations": [], "beats": [], "notes": [], "elapsed_s": round(elapsed, 3)}


def run_isolated(key: str, path: str, opts: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """Runs one problem in a fresh Python process with a timeout (a Dask task calls this)."""
    start = time.perf_counter()
    payload = json.dumps({"path": path, "opts": opts})
    # A session of its own: the processes the problem starts end with it (bench/parent_watch.py).
    proc = subprocess.Popen([sys.executable, "-m", "solar.bench.worker"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        stdout, stderr = proc.communicate(payload, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        end_group(proc.pid)
        proc.communicate()
        return failed_record(key, "timeout", f"no result within {timeout_s:g} s: killed",
                             time.perf_counter() - start)
    finally:
        end_group(proc.pid)
    for line in reversed(stdout.splitlines()):
        if line.startswith(_MARK):
            rec = json.loads(line[len(_MARK):])
            rec["problem"] = key
            return rec
    tail = (stderr.strip().splitlines() or [""])[-1]
    return failed_record(key, "crashed", f"the process exited with status {proc.returncode}: {tail}"[:500],
                         time.perf_counter() - start)


def _quiet_logs() -> None:
    import logging
    import warnings

    warnings.simplefilter("ignore")
    logging.getLogger("torch").setLevel(logging.ERROR)


def main() -> None:
    _quiet_logs()
    task = json.loads(sys.stdin.read())
    # The record and SOLAR's own errors go out on copies of stdout and stderr that no process the problem
    # starts inherits (os.dup's are not inheritable): one left running must not hold the pipes open.
    record_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    sys.stderr = os.fdopen(os.dup(2), "w", encoding="utf-8", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    cpu = time.process_time()
    rec = bench_problem(task["path"], BenchOptions.from_json(task["opts"]))
    rec["cpu_s"] = round(time.process_time() - cpu, 3)
    record_out.write(_MARK + json.dumps(rec) + "\n")
    record_out.flush()


if __name__ == "__main__":
    main()
    exit_now(0)  # the record is written: skip the interpreter's teardown (solar/ir/startup.py)
