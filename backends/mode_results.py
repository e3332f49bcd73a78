"""A mode's figures on one target: the Σ over its units (or groups) of each one's roofline, with its FLOPs and
DRAM bytes (docs/sol.md, "Modes")."""

from __future__ import annotations

from dataclasses import dataclass

from .cost import Peaks, Work


def roofline_bound(tensor_s: float, vector_s: float, memory_s: float, seconds: float) -> str:
    """`tensor`, `vector` or `memory`: the largest roofline term (the first on a tie; `none` for no time)."""
    parts = {"tensor": tensor_s, "vector": vector_s, "memory": memory_s}
    return max(parts, key=lambda k: parts[k]) if seconds > 0 else "none"


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
        return roofline_bound(self.tensor_s, self.vector_s, self.memory_s, self.seconds)

    @property
    def compute_s(self) -> float:
        return max(self.tensor_s, self.vector_s)

    @property
    def compute_bound(self) -> bool:
        """Compute's term above memory's; a tie counts as memory-bound (serving's vocabulary, bench/llm_serving.py:
        a step is compute- or memory-bound, and data movement sets the time when neither is ahead)."""
        return self.compute_s > self.memory_s


def mode_result(mode: str, works: list[Work], peaks: Peaks) -> ModeResult:
    timings = [peaks.time(w) for w in works]
    return ModeResult(mode, sum(t.seconds for t in timings), sum(t.tensor_s for t in timings),
                      sum(t.vector_s for t in timings), sum(t.memory_s for t in timings),
                      sum(w.flops for w in works), sum(w.total_bytes for w in works))
