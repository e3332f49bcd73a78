"""Headroom and violations: measured time ÷ SOL per mode, and every run faster than a bound.

* Headroom = measured ÷ SOL, for the median and for the minimum of the timed runs.
* A **violation** is a minimum below the fused, cache-aware or whole-graph bound: these are lower bounds by
  construction, so a violation is a bug in a count, a peak or the precision policy (docs/bench.md).
* The unfused mode prices eager execution with every kernel's inputs and outputs in DRAM. A run beating it
  while the intermediates (all tensors one kernel writes and another reads, together) fit in the target's
  last-level cache is reported apart, as "beats the unfused model (intermediates cached)", and is no
  violation; when they exceed that cache, beating the unfused bound is a violation too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from solar.backends.report import seconds

from .bounds import LOWER_BOUND_MODES, MODE_LABELS, MODES, Bounds
from .measure import Measurement

CACHED_BEAT = "beats the unfused model (intermediates cached)"


@dataclass(frozen=True)
class Beat:
    """A run faster than a bound: a violation, or the unfused model beaten with cached intermediates."""

    target: str
    framework_mode: str
    mode: str
    measured_s: float
    bound_s: float
    violation: bool
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "framework_mode": self.framework_mode, "mode": self.mode,
                "measured_s": self.measured_s, "bound_s": self.bound_s, "why": self.why}

    def line(self) -> str:
        head = "VIOLATION" if self.violation else "note"
        mode = MODE_LABELS.get(self.mode, self.mode)
        return (f"{head}: {self.framework_mode} ran in {seconds(self.measured_s)}, below the {mode} bound of "
                f"{seconds(self.bound_s)} on {self.target} ({self.why})")


def judge(bounds: Bounds, target: str, measurements: list[Measurement]
          ) -> tuple[dict[str, dict[str, dict[str, float]]], list[Beat]]:
    """Headroom per framework mode and SOL mode against `target` (the target of the machine that ran),
    and every beaten bound."""
    tb = bounds.targets[target]
    headroom: dict[str, dict[str, dict[str, float]]] = {}
    beats: list[Beat] = []
    for m in measurements:
        if not m.ok or m.min_s is None or m.median_s is None:
            continue
        per_mode: dict[str, dict[str, float]] = {}
        for mode in MODES:
            sol = tb.seconds.get(mode)
            if not sol:
                continue
            per_mode[mode] = {"median": m.median_s / sol, "min": m.min_s / sol}
            if m.min_s >= sol:
                continue
            if mode in LOWER_BOUND_MODES:
                beats.append(Beat(target, m.mode, mode, m.min_s, sol, True,
                                  "a lower bound by construction: a count, a peak or the precision policy is wrong"))
            elif tb.llc_bytes is None:
                beats.append(Beat(target, m.mode, mode, m.min_s, sol, False,
                                  "beats the unfused model (the target gives no last-level cache to judge by)"))
            elif bounds.intermediate_bytes <= tb.llc_bytes:
                beats.append(Beat(target, m.mode, mode, m.min_s, sol, False,
                                  f"{CACHED_BEAT}: {bounds.intermediate_bytes} B of intermediates, "
                                  f"last-level cache {tb.llc_bytes} B"))
            else:
                beats.append(Beat(target, m.mode, mode, m.min_s, sol, True,
                                  f"the intermediates ({bounds.intermediate_bytes} B) exceed the last-level cache "
                                  f"({tb.llc_bytes} B), so they went through DRAM"))
        headroom[m.mode] = per_mode
    return headroom, beats
