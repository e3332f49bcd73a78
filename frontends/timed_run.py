"""Running IR under a wall-clock limit: in a child process, killed when the limit passes.

Compiled kernels cannot be interrupted from Python, so an IR written by a language model (which may loop for
hours at the validation sizes) runs in a child. Children are forked from a server process that has only
imported the executor (multiprocessing's "forkserver"): no threads of the parent (PyTorch's, a parallel
kernel's) are inherited, and a child starts in milliseconds instead of re-importing NumPy and Numba.

    outs = run_with_limit(module, args, params={"B": 2}, seconds=60.0)   # RunTimeout when it takes longer
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Mapping, Sequence
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from solar.ir.ops import ModuleOp
from solar.ir.printer import print_module


class RunTimeout(Exception):
    """The run did not finish within the limit (the child was killed)."""


class RunFailed(Exception):
    """The IR raised while running (or its process died); the message says how."""


_CONTEXT: Any = None


def _context() -> Any:
    global _CONTEXT
    if _CONTEXT is None:
        methods = multiprocessing.get_all_start_methods()
        if "forkserver" in methods:
            _CONTEXT = multiprocessing.get_context("forkserver")
            # Not "__main__" (multiprocessing's default): the server must not re-run the caller's script.
            _CONTEXT.set_forkserver_preload(["solar.backends.executor"])
        else:
            _CONTEXT = multiprocessing.get_context("spawn")
    return _CONTEXT


def _child(conn: Connection, text: str, args: list[np.ndarray], params: dict[str, int] | None) -> None:
    try:
        from solar.backends.executor import run
        from solar.ir import parse_and_verify

        outs = run(parse_and_verify(text, "candidate.sir"), args, params=params)
        conn.send(("ok", outs))
    except Exception as err:
        conn.send(("error", f"{type(err).__name__}: {err}"))
    finally:
        conn.close()


def run_with_limit(module: ModuleOp, args: Sequence[np.ndarray], params: Mapping[str, int] | None,
                   seconds: float) -> list[np.ndarray]:
    """The outputs of `module` on `args`; RunTimeout after `seconds` of wall-clock time, RunFailed when the run
    raises or its process dies. The module travels as SIR text (printing and parsing round-trip)."""
    ctx = _context()
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, print_module(module), list(args), dict(params) if params else None),
                       daemon=True)
    proc.start()
    send.close()
    try:
        if not receive.poll(seconds):
            raise RunTimeout(f"the run took more than {seconds:g} s")
        try:
            kind, payload = receive.recv()
        except EOFError:
            proc.join(5)
            raise RunFailed(f"the process running the IR died (exit code {proc.exitcode})") from None
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        receive.close()
    if kind != "ok":
        raise RunFailed(payload)
    return list(payload)


__all__ = ["RunFailed", "RunTimeout", "run_with_limit"]
