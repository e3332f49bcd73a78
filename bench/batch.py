"""Batch mode: every problem of a directory (KernelBench convention, searched recursively), on local worker
processes or a Dask cluster, one JSON line per problem, resumable (docs/bench.md, "Batch mode").

A problem runs under a timeout in a process of its own: a pool process here (killed and replaced when it
hangs or dies), a fresh process per problem on Dask (`worker.run_isolated`). Either way a crashing or
hanging problem is recorded (status `timeout` or `crashed`) and the batch goes on.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import multiprocessing as mp
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from solar.ir.outputs import atomic_open

from .parent_watch import end_group
from .record_shape import shape_error
from .worker import READY, failed_record, run_isolated, serve

_SKIP_DIRS = {"__pycache__", ".git", ".venv", "Output"}
MAX_PROBLEM_BYTES = 16 << 20  # a problem file is source code: a larger "file" (/dev/zero behind a link) is no problem


class BatchError(Exception):
    """A batch that cannot run (an unreachable scheduler, workers that die at start, a results file another
    batch is writing): one line, exit status 1."""


def discover(root: str) -> list[str]:
    """Problem files under `root`, sorted: `.py` files that define `get_inputs` (a KernelBench problem, or
    a JAX program with `forward`), found without importing them."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        for name in filenames:
            if not name.endswith(".py") or name.startswith("_"):
                continue
            path = os.path.join(dirpath, name)
            try:  # only regular files of source size: a FIFO would block the read, a device never end it
                info = os.stat(path)
                if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_PROBLEM_BYTES:
                    continue
                with open(path, "rb") as fh:
                    text = fh.read(MAX_PROBLEM_BYTES).decode("utf-8", errors="replace")
            except OSError:
                continue
            if "def get_inputs" in text:
                found.append(path)
    return sorted(found, key=lambda p: os.path.relpath(p, root))


# ---- the JSONL file ---------------------------------------------------------------------------------------


class ResultsFile:
    """The JSONL output: one record per line, each line written whole, flushed and synced, so an interrupted
    batch leaves every finished problem on disk; `done()` reads it back for --resume.

    The file is never truncated in place. --resume appends whole lines. A new batch (or --overwrite) writes
    into a temporary file beside it, which replaces it when the batch ends, finished or interrupted
    (Ctrl-C): a batch that is killed outright leaves the previous file as it was."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._fh: Any = None
        self._tmp: str | None = None
        self._lock: tuple[int, str] | None = None

    def lock(self) -> None:
        """Holds an exclusive lock for the batch on a lock file beside the results (`.NAME.lock`, removed when
        the batch ends): a second batch on the same results (two --resume runs would each run every problem
        and record it twice) is refused at once. The lock is not on the results file itself, which may not
        exist yet and is replaced as a whole (--overwrite, the repair of a torn line)."""
        if self.path is None or (os.path.exists(self.path) and not os.path.isfile(self.path)):
            return  # /dev/stdout and the like: nothing to share
        import fcntl

        target = Path(self.path)
        lock_path = str(target.parent / f".{target.name}.lock")
        while True:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise BatchError(f"{self.path} is being written by another solar-bench batch: wait for it, or "
                                 "give another --out") from None
            try:  # the batch that held it may have removed it in between: only the file at the path counts
                if os.stat(lock_path).st_ino == os.fstat(fd).st_ino:
                    self._lock = (fd, lock_path)
                    return
            except FileNotFoundError:
                pass
            os.close(fd)

    def done(self) -> dict[str, dict[str, Any]]:
        """Problems already recorded. A torn last line (from an interruption) is dropped from the file; a
        whole record that only lacks its newline is kept and given one. Lines that are not records are
        skipped (their problems run again); a record the summary could not read is a BatchError naming its
        line, before the file is touched."""
        if self.path is None or not os.path.exists(self.path):
            return {}
        data = Path(self.path).read_bytes()
        cut = data.rfind(b"\n") + 1
        torn = bool(data) and not data.endswith(b"\n") and _record(data[cut:].decode("utf-8", "replace")) is None
        out: dict[str, dict[str, Any]] = {}
        for number, line in enumerate((data[:cut] if torn else data).decode("utf-8", "replace").splitlines(), 1):
            rec = _record(line)
            if rec is None:
                continue
            wrong = shape_error(rec)
            if wrong is not None:
                raise BatchError(f"{self.path}:{number}: the record of {rec['problem']} is malformed: {wrong} "
                                 "(remove the line to run the problem again)")
            out[rec["problem"]] = rec
        if data and not data.endswith(b"\n"):
            with atomic_open(self.path, "wb", "results") as fh:
                fh.write(data[:cut] if torn else data + b"\n")
        return out

    def open(self, append: bool) -> None:
        if self.path is None:
            return
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        target = Path(self.path)
        if append or not target.exists() or not target.is_file():
            self._fh = open(target, "a", encoding="utf-8")  # noqa: SIM115
            return
        fd, self._tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.stem}.", suffix=".tmp.jsonl")
        self._fh = os.fdopen(fd, "w", encoding="utf-8")

    def write(self, rec: dict[str, Any]) -> None:
        if self._fh is not None:
            self._fh.write(json.dumps(rec, sort_keys=False) + "\n")
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def close(self, commit: bool = True) -> None:
        """Closes the file; a temporary one replaces the old file when `commit`, and is removed otherwise
        (a batch that failed before it ran anything keeps the old results)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        if self._tmp is not None and self.path is not None:
            if commit:
                mode = stat.S_IMODE(os.stat(self.path).st_mode) if os.path.exists(self.path) else None
                if mode is not None:
                    os.chmod(self._tmp, mode)
                os.replace(self._tmp, self.path)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(self._tmp)
            self._tmp = None
        if self._lock is not None:
            fd, lock_path = self._lock
            with contextlib.suppress(OSError):
                os.unlink(lock_path)  # before the lock is released: a batch that opened it then sees it gone
            os.close(fd)
            self._lock = None


def _record(line: str) -> dict[str, Any] | None:
    """The record on one JSONL line (a JSON object with a `problem` string), or None when the line is not
    one (a torn line, or JSON of another shape); whether its fields are whole is `shape_error`'s question."""
    try:
        rec = json.loads(line)
    except ValueError:
        return None
    return rec if isinstance(rec, dict) and isinstance(rec.get("problem"), str) else None


# ---- running ----------------------------------------------------------------------------------------------


DASK_CONNECT_S = 10  # how long to try to reach a Dask scheduler before saying it cannot be reached


@dataclass
class BatchOptions:
    jobs: int = 1
    timeout_s: float = 600.0
    dask: str | None = None  # a scheduler address, or "local" for a LocalCluster


@dataclass
class Task:
    key: str  # the problem's path relative to the batch directory
    path: str  # absolute
    started: float = 0.0


@dataclass
class _Slot:
    proc: Any
    conn: Connection
    task: Task | None = None
    ready: bool = False  # the worker has imported what problems need (the time limit starts after)


# Longer than most: the pool's loop (start, poll, time out, replace, record) shares the slots and the pending tasks.
def run_local(tasks: list[Task], opts: dict[str, Any], batch: BatchOptions,
              on_record: Callable[[dict[str, Any]], None], on_start: Callable[[Task], None] = lambda t: None) -> None:
    """Runs `tasks` on `batch.jobs` pool processes; a process that passes the timeout is killed and
    replaced (record `timeout`), one that dies is replaced (record `crashed`)."""
    ctx = mp.get_context("spawn")  # a fresh interpreter: no inherited threads or locks of torch
    pending = list(reversed(tasks))

    def start() -> _Slot:
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=serve, args=(child,), daemon=True)
        proc.start()
        child.close()
        return _Slot(proc, parent)

    slots = [start() for _ in range(max(1, min(batch.jobs, len(tasks))))]
    failed_starts = 0
    try:
        while pending or any(s.task is not None for s in slots):
            for k, s in enumerate(slots):
                if not s.ready and s.conn.poll():
                    with contextlib.suppress(EOFError, OSError):
                        s.ready = s.conn.recv() == READY
                    failed_starts = 0 if s.ready else failed_starts
                if not s.ready and not s.proc.is_alive():
                    failed_starts += 1
                    if failed_starts > 3 * len(slots):
                        raise BatchError(f"worker processes die while starting (exit status {s.proc.exitcode})")
                    slots[k] = s = start()
                if s.ready and s.task is None and not s.proc.is_alive():  # left after a problem it could not undo
                    end_group(s.proc.pid)
                    slots[k] = s = start()
                    continue
                if s.ready and s.task is None and pending:
                    s.task = pending.pop()
                    s.task.started = time.perf_counter()
                    on_start(s.task)
                    s.conn.send((s.task.key, s.task.path, opts))
            busy = [s for s in slots if s.task is not None]
            starting = [s.conn for s in slots if not s.ready]
            ready = wait([s.conn for s in busy] + [s.proc.sentinel for s in busy] + starting, timeout=0.2)
            now = time.perf_counter()
            for k, s in enumerate(slots):
                if s.task is None:
                    continue
                task = s.task
                if s.conn in ready:
                    try:
                        rec = s.conn.recv()
                    except (EOFError, OSError):
                        rec = None
                    if rec is not None:
                        s.task = None
                        on_record(rec)
                        continue
                if not s.proc.is_alive() or s.proc.sentinel in ready:
                    s.proc.join(1)
                    end_group(s.proc.pid)  # what its problem started
                    on_record(failed_record(task.key, "crashed", f"the worker process died (exit status "
                                            f"{s.proc.exitcode})", now - task.started))
                    slots[k] = start()
                elif now - task.started > batch.timeout_s:
                    end_group(s.proc.pid)  # the worker, hung or stopped, and every process its problem started
                    s.proc.kill()
                    s.proc.join(5)
                    on_record(failed_record(task.key, "timeout", f"no result within {batch.timeout_s:g} s: killed",
                                            now - task.started))
                    slots[k] = start()
    finally:
        for s in slots:
            if s.proc.is_alive():
                with contextlib.suppress(BrokenPipeError, OSError):
                    s.conn.send(None)
                s.proc.join(2)
            end_group(s.proc.pid)  # the worker if it is still running, and what its problems left running
            if s.proc.is_alive():  # a worker still starting leads no group yet
                s.proc.kill()
            s.proc.join(2)


def run_dask(tasks: list[Task], opts: dict[str, Any], batch: BatchOptions,
             on_record: Callable[[dict[str, Any]], None], on_start: Callable[[Task], None] = lambda t: None) -> None:
    """Runs `tasks` on a dask.distributed cluster (an address, or `local`: a LocalCluster of `jobs`
    single-threaded worker processes), each problem in a fresh process on its worker."""
    from distributed import Client, LocalCluster, as_completed

    cluster = None
    try:
        if batch.dask == "local":
            cluster = LocalCluster(n_workers=max(1, batch.jobs), threads_per_worker=1, processes=True,
                                   dashboard_address=None)
            client = Client(cluster)
        else:
            client = Client(batch.dask, timeout=DASK_CONNECT_S)
    except (OSError, TimeoutError, ValueError, TypeError) as err:
        if cluster is not None:
            cluster.close()
        raise BatchError(f"--dask {batch.dask}: cannot reach the scheduler: {type(err).__name__}: "
                         f"{str(err).splitlines()[0] if str(err) else ''}"[:300]) from None
    try:
        futures = {}
        for t in tasks:
            on_start(t)
            fut = client.submit(run_isolated, t.key, t.path, opts, batch.timeout_s, key=f"solar-bench-{t.key}",
                                pure=False)
            futures[fut] = t
        for fut in as_completed(futures):
            t = futures[fut]
            try:
                rec = fut.result()
            except Exception as err:  # the Dask worker itself failed
                rec = failed_record(t.key, "crashed", f"dask: {type(err).__name__}: {err}"[:500], 0.0)
            on_record(rec)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def tasks_for(root: str, done: dict[str, Any], match: list[str] | None = None) -> Iterator[Task]:
    """Problems under `root` not in `done`, and when `match` is given those whose path relative to
    `root` matches one of its shell patterns (`conv*`, `torch/mm_*`)."""
    for path in discover(root):
        key = os.path.relpath(path, root)
        if key in done:
            continue
        if match and not any(fnmatch.fnmatch(key, pat) or fnmatch.fnmatch(os.path.basename(key), pat)
                             for pat in match):
            continue
        yield Task(key, os.path.abspath(path))


def run_batch(root: str, opts: dict[str, Any], batch: BatchOptions, results: ResultsFile, resume: bool,
              progress: Any = None, match: list[str] | None = None) -> list[dict[str, Any]]:
    """Every problem under `root` (matching `match`) not yet in `results` (with `resume`); returns all
    records, old and new."""
    results.lock()
    try:
        done = results.done() if resume else {}
    except BaseException:
        results.close(commit=False)
        raise
    tasks = list(tasks_for(root, done, match))
    records = list(done.values())
    results.open(append=resume)
    bar = progress.start(len(tasks) + len(done), len(done)) if progress is not None else None

    def on_record(rec: dict[str, Any]) -> None:
        records.append(rec)
        results.write(rec)
        if bar is not None:
            progress.advance(rec)

    def on_start(task: Task) -> None:
        if bar is not None:
            progress.started(task)

    finished = False
    try:
        runner = run_dask if batch.dask else run_local
        if tasks:
            runner(tasks, opts, batch, on_record, on_start)
        finished = True
    finally:
        # A new file replaces the old one when the batch finished, or was stopped (Ctrl-C, SIGTERM) after
        # recording something; a batch that failed, or recorded nothing, leaves the old file as it was.
        results.close(commit=finished or len(records) > len(done))
        if bar is not None:
            progress.stop()
    return records
