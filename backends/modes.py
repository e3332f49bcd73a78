"""The inverse roofline for a latency target (`Inverse`): the least scaling of a target's peaks that meets it.
Split from backends/cost.py, which re-exports it."""

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
