"""What a problem runs with, as plain data: the options every process of solar-bench shares (the command
line's, a pool worker's, a Dask worker's, a measuring process's), and the version of the record it makes.
Light on purpose: solar-bench's own process reads them without importing the frontends or the passes."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .measure import FRAMEWORK_MODES

RECORD_VERSION = 1


@dataclass
class BenchOptions:
    """Everything a worker needs for a problem; plain data, so it travels to processes and Dask workers."""

    targets: list[str] = field(default_factory=lambda: ["host"])
    sizes: dict[str, Any] = field(default_factory=dict)  # SizeRequest.to_json()
    frameworks: list[str] = field(default_factory=lambda: list(FRAMEWORK_MODES))
    measure: bool = True
    device: str = "auto"  # auto | cpu | cuda
    timing: dict[str, Any] = field(default_factory=dict)  # TimingOptions fields
    source: str | None = None  # the original program of a .sir
    seed: int = 0
    quiet_wait_s: float = 0.0  # --quiet-wait: how long to wait for a quiet machine before measuring
    precision_floor: str | None = None  # --precision-floor: contractions priced at it where faster

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> BenchOptions:
        return cls(**doc)
