"""The measured share of each source line: PyTorch eager runs under `torch.profiler` on the CPU, each top-level
torch call inside a profiler range named after the innermost frame of the user's own code (the stack as the
call saw it). A line's measured time is the total of its ranges per run; its share, that over all lines'.

torch.profiler's own Python stacks name a function's first line, not the calling line, so the call's line
is taken from the interpreter's frames at the call instead (the same rule as the frontends' locations:
the innermost frame outside the frameworks and installed packages; docs/sol.md, "By source line").
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from solar.frontends.diagnostics import is_library_file

_RANGE = "solar-line:"  # profiler ranges named `solar-line:FILE:LINE`


@dataclass
class LineProfile:
    """Measured time per run of each source line (seconds), over `runs` profiled eager runs."""

    seconds: dict[tuple[str, int], float]
    runs: int

    @property
    def total(self) -> float:
        return sum(self.seconds.values())

    def share(self, file: str, line: int) -> float | None:
        total = self.total
        t = self.seconds.get((file, line))
        return None if t is None or total <= 0 else t / total


def _user_line() -> tuple[str, int] | None:
    frame = sys._getframe(2)
    while frame is not None:
        file = frame.f_code.co_filename
        module = str(frame.f_globals.get("__name__", ""))
        own = module == "solar" or module.startswith("solar.")  # SOLAR's own frames are nobody's line
        if not file.startswith("<") and not is_library_file(file) and not own:
            return os.path.abspath(file), frame.f_lineno
        frame = frame.f_back
    return None


def profile_lines(run: Callable[[], Any], runs: int = 3) -> LineProfile:
    """Profiles `runs` calls of `run` (after one untimed call) and attributes the time to source lines."""
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.profiler import ProfilerActivity, profile, record_function

    class LineRanges(TorchFunctionMode):
        """Wraps each top-level torch call in a profiler range named after the user's line."""

        def __init__(self) -> None:
            super().__init__()
            self.depth = 0

        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            where = _user_line() if self.depth == 0 else None
            if where is None:
                return func(*args, **kwargs)
            self.depth += 1
            try:
                with record_function(f"{_RANGE}{where[0]}:{where[1]}"):
                    return func(*args, **kwargs)
            finally:
                self.depth -= 1

    with torch.inference_mode():
        run()
        with profile(activities=[ProfilerActivity.CPU]) as prof, LineRanges():
            for _ in range(runs):
                run()
    seconds: dict[tuple[str, int], float] = {}
    for event in prof.events():
        if event.name.startswith(_RANGE):
            file, _, line = event.name[len(_RANGE):].rpartition(":")
            key = (file, int(line))
            seconds[key] = seconds.get(key, 0.0) + event.cpu_time_total * 1e-6 / runs
    return LineProfile(seconds, runs)


def add_measured(doc: dict[str, Any], profile: LineProfile, machine: str | None) -> None:
    """Adds to each source line of the `--sol-report` document its measured time and share, and on the
    measuring machine's target its headroom (measured ÷ the line's unfused SOL)."""
    for target in doc["targets"]:
        for ln in target.get("source_lines", []):
            ln.update(measured_s=None, measured_share=None, headroom=None)
            if not ln["file"]:
                continue
            key = (os.path.abspath(ln["file"]), ln["line"])
            ln["measured_s"] = profile.seconds.get(key)
            ln["measured_share"] = profile.share(*key)
            if target["name"] == machine and ln["measured_s"] is not None and ln["unfused_s"] > 0:
                ln["headroom"] = ln["measured_s"] / ln["unfused_s"]
