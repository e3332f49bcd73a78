"""A mode's figures on one target: the Σ over its units (or groups) of each one's roofline, with its FLOPs and
DRAM bytes (docs/sol.md, "Modes")."""

from __future__ import annotations

from dataclasses import dataclass

from .cost import Peaks, Work


@dataclass(frozen=True)
class ModeResult:
    """One mode's figures on one target: its time (Σ of each unit's roofline), the Σ of each roofline term,
    its FLOPs and DRAM bytes. A sweep's point (`sweep.PointCost`) is one of these with its sizes."""

    mode: str
    seconds: float
    tensor_s: float
    vector_s: float
    memory_s: float
    flops: int
    bytes: int

    @property
    def bound(self) -> str:
        """`tensor`, `vector` or `memory`: the largest term of the mode's Σ (`none` for no time at all)."""
        parts = {"tensor": self.tensor_s, "vector": self.vector_s, "memory": self.memory_s}
        return max(parts, key=lambda k: parts[k]) if self.seconds > 0 else "none"

    @property
    def compute_s(self) -> float:
        return max(self.tensor_s, self.vector_s)


def mode_result(mode: str, works: list[Work], peaks: Peaks) -> ModeResult:
    timings = [peaks.time(w) for w in works]
    return ModeResult(mode, sum(t.seconds for t in timings), sum(t.tensor_s for t in timings),
                      sum(t.vector_s for t in timings), sum(t.memory_s for t in timings),
                      sum(w.flops for w in works), sum(w.total_bytes for w in works))
