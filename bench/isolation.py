"""What keeps the problems of one pool worker apart, and the worker tied to its batch.

A pool worker runs problems one after another in one interpreter, so what one problem changes in the
process must not reach the next: `torch.set_default_dtype(torch.float64)` in one problem would double the
next one's bytes and bounds. `TorchState` captures the process-wide settings a problem can change before the
first problem, and puts them back after each. Where a setting cannot be put back, the worker says so and is
replaced (`clean_after` returns False), so the next problem starts in a fresh process.

`detach_worker` makes the worker a good citizen of its batch: Ctrl-C at the terminal reaches every process
of the group, and only the batch process handles it (it stops the workers), so workers ignore SIGINT (a
KeyboardInterrupt inside one then comes from a problem, and is recorded); on Linux the worker is killed when
the batch process dies, even by SIGKILL, instead of running on orphaned; it leads a process group of its own,
which the batch kills when a problem times out and when the worker ends, so that no process a problem started
outlives it; and its stdout and stderr go to
/dev/null, so a problem that prints megabytes never reaches the batch's summary or progress bar.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass
from typing import Any

from .parent_watch import die_with_parent, lead_own_group


def detach_worker() -> None:
    """Ignores Ctrl-C, dies with the parent and leads a process group that the batch ends with every process
    a problem started (bench/parent_watch.py), and silences the problems' output."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()
    lead_own_group()
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        with contextlib.suppress(OSError):
            os.dup2(devnull, fd)
    os.close(devnull)


@dataclass
class TorchState:
    """The process-wide PyTorch settings a problem may change, as captured."""

    default_dtype: Any
    grad_enabled: bool
    num_threads: int
    matmul_precision: str
    deterministic: bool
    default_device: Any
    flags: dict[str, bool]

    @classmethod
    def capture(cls) -> TorchState:
        import torch

        return cls(torch.get_default_dtype(), torch.is_grad_enabled(), torch.get_num_threads(),
                   torch.get_float32_matmul_precision(), torch.are_deterministic_algorithms_enabled(),
                   _default_device(), _flags())

    def restore(self) -> None:
        """Sets back what differs (setting an unchanged one could push modes or warn)."""
        import torch

        now = TorchState.capture()
        if now.default_dtype != self.default_dtype:
            torch.set_default_dtype(self.default_dtype)
        if now.grad_enabled != self.grad_enabled:
            torch.set_grad_enabled(self.grad_enabled)
        if now.num_threads != self.num_threads:
            torch.set_num_threads(self.num_threads)
        if now.matmul_precision != self.matmul_precision:
            torch.set_float32_matmul_precision(self.matmul_precision)
        if now.deterministic != self.deterministic:
            torch.use_deterministic_algorithms(self.deterministic)
        if now.default_device != self.default_device:
            cpu = self.default_device is None or str(self.default_device) == "cpu"
            torch.set_default_device(None if cpu else self.default_device)
        for name, value in self.flags.items():
            if now.flags.get(name) != value:
                owner, attr = _flag_owner(name)
                setattr(owner, attr, value)

    def clean_after(self) -> bool:
        """Puts the settings back after a problem; False when some could not be (replace the worker)."""
        try:
            self.restore()
            return TorchState.capture() == self
        except Exception:
            return False


def _default_device() -> Any:
    import torch

    get = getattr(torch, "get_default_device", None)
    return get() if get is not None else None


_FLAGS = ("backends.cuda.matmul.allow_tf32", "backends.cudnn.allow_tf32", "backends.cudnn.benchmark",
          "backends.cudnn.deterministic", "backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
          "backends.cuda.matmul.allow_bf16_reduced_precision_reduction")


def _flag_owner(name: str) -> tuple[Any, str]:
    import torch

    owner: Any = torch
    *path, attr = name.split(".")
    for part in path:
        owner = getattr(owner, part)
    return owner, attr


def _flags() -> dict[str, bool]:
    out = {}
    for name in _FLAGS:
        with contextlib.suppress(AttributeError):
            owner, attr = _flag_owner(name)
            out[name] = bool(getattr(owner, attr))
    return out
