"""A mode's figures from its units' rooflines (`ModeResult`: Σ of each unit's time and terms) and the inverse
roofline for a latency target (`Inverse`): what the pricing hands to every view of the results. Split from
backends/cost.py, which re-exports them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class _Timing(Protocol):  # backends.cost.Timing (the cost model imports this module: no import back)
    seconds: float
    tensor_s: float
    vector_s: float
    memory_s: float


class Peaks(Protocol):  # backends.cost.Peaks
    @property
    def bandwidth(self) -> float: ...

    def time(self, work: Any) -> _Timing: ...


class Work(Protocol):  # backends.cost.Work
    @property
    def flops(self) -> Any: ...

    @property
    def total_bytes(self) -> Any: ...

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


def mode_result(mode: str, works: Sequence[Work], peaks: Peaks) -> ModeResult:
    timings = [peaks.time(w) for w in works]
    return ModeResult(mode, sum(t.seconds for t in timings), sum(t.tensor_s for t in timings),
                      sum(t.vector_s for t in timings), sum(t.memory_s for t in timings),
                      sum(w.flops for w in works), sum(w.total_bytes for w in works))


@dataclass(frozen=True)
class Inverse:
    """For a latency target: the least scaling of the target's peaks that meets it, per mode.

    `compute_factor`: how much faster every compute peak must be if memory were infinitely fast;
    `bandwidth_factor`: how much faster DRAM must be if compute were infinitely fast; `both_factor`: the
    least common speed-up of compute and bandwidth together (each unit's roofline scales by it, so the
    mode then meets the latency exactly). A factor ≤ 1 means the target already meets the latency.
    """

    mode: str
    latency_s: float
    compute_factor: float
    bandwidth_factor: float
    both_factor: float
    least_bandwidth: float  # B/s with infinitely fast compute


def inverse_roofline(mode: str, works: Sequence[Work], peaks: Peaks, latency_s: float) -> Inverse:
    timings = [peaks.time(w) for w in works]
    compute = sum(max(t.tensor_s, t.vector_s) for t in timings)
    memory = sum(t.memory_s for t in timings)
    total = sum(t.seconds for t in timings)
    return Inverse(mode, latency_s, compute / latency_s, memory / latency_s, total / latency_s,
                   peaks.bandwidth * memory / latency_s)
