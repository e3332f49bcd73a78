"""A child process that dies with its parent: the measuring process of one problem, and the pool workers
of a batch, must never run on orphaned (a hanging problem at 100% CPU, long after `kill -9` of solar-bench).

On Linux the kernel does it: prctl(PR_SET_PDEATHSIG, SIGKILL) kills the child the moment its parent dies,
whatever the child is doing (a problem stuck in a C extension holds the GIL, so no Python thread could act).
Elsewhere a daemon thread polls the parent's pid and ends the process when it changes (the child was
re-parented), which works whenever the problem lets Python threads run.

A problem may start processes of its own (a `sleep` in a subprocess, a server it forgot to stop). The
measuring process and each pool worker lead a session of their own (`lead_own_group`), so every process the
problem starts is in their group, and solar-bench ends the whole group (`end_group`) when the problem is
done, timed out or interrupted: nothing the problem started outlives it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time

_PR_SET_PDEATHSIG = 1  # prctl(2)
POLL_S = 0.5  # how often the fallback thread looks at the parent's pid


def die_with_parent() -> None:
    """Ties this process's life to its parent's. Call it first thing in the child."""
    parent = os.getppid()
    if sys.platform.startswith("linux") and _prctl_death_signal(signal.SIGKILL):
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)
        return
    threading.Thread(target=_watch, args=(parent,), name="solar-parent-watch", daemon=True).start()


def _prctl_death_signal(sig: int) -> bool:
    with contextlib.suppress(OSError, AttributeError):
        return ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(sig)) == 0
    return False


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(POLL_S)
    os._exit(1)


def lead_own_group() -> None:
    """Makes this process the leader of a new session and process group (for a pool worker: the measuring
    process gets one from Popen). Its own processes join the group, and `end_group` ends them all."""
    with contextlib.suppress(OSError):  # already a group leader: it leads one
        os.setsid()


def end_group(leader: int) -> None:
    """Kills the process group led by `leader` (SIGKILL: a stopped or hung process ends too). Call it before
    the leader is reaped, or right after, while its pid cannot yet name another process."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(leader, signal.SIGKILL)
