"""The machine's conditions around a measurement: load, CPU steal, other processes' CPU use, and the spread of
the timed runs; whether they make the run `noisy` (docs/bench.md, "Noise").

A measurement on a busy machine is slower than the program: its threads wait for CPUs others hold. The time
is still a true time (and a violation, judged on the minimum, which noise only raises, is still a bug), but
its headroom describes the machine, not the program. So the conditions are recorded with every measurement,
and a run is marked noisy when any of these holds:

* the one-minute load average, read before the runs, exceeds the CPUs this process may use;
* the hypervisor stole more than STEAL_LIMIT of the CPU time during the runs;
* other processes kept so many CPUs busy during the runs that fewer were left than the measurement's
  threads (with OTHERS_SLACK CPUs of tolerance for daemons);
* a framework mode's median lies more than SPREAD_LIMIT above its minimum.

Every figure comes through a `Probes` object (Linux's /proc by default), so tests inject the machine they
want and never depend on the real one's load.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

STEAL_LIMIT = 0.02  # share of all CPU time taken by the hypervisor
OTHERS_SLACK = 0.25  # CPUs other processes may use without competing (daemons, the terminal)
SPREAD_LIMIT = 0.25  # (median - min) / min of one framework mode's timed runs
QUIET_SAMPLE_S = 1.0  # the window --quiet-wait samples the other processes' CPU use over


@dataclass(frozen=True)
class CpuSample:
    """Cumulative CPU seconds at one moment: all CPUs of the machine, and this process's own."""

    busy_s: float  # user, nice, system, irq and softirq, summed over the machine's CPUs
    steal_s: float
    total_s: float  # every field of /proc/stat's `cpu` line, idle and steal included
    own_s: float  # this process, all its threads
    wall_s: float
    online_cpus: int


@dataclass(frozen=True)
class Probes:
    """Where the conditions are read from; tests pass fakes."""

    load_average: Callable[[], float | None]  # the one-minute load average; None where unknown
    cpu_sample: Callable[[], CpuSample | None]  # None where the machine gives no CPU accounting
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic


def _load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def _proc_stat_sample() -> CpuSample | None:
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    fields = [int(x) for x in lines[0].split()[1:]] if lines and lines[0].startswith("cpu ") else []
    if len(fields) < 8:
        return None
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    online = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
    # guest time is already inside user and nice (proc(5)), so the first eight fields are the whole
    return CpuSample(busy_s=(user + nice + system + irq + softirq) / tick, steal_s=steal / tick,
                     total_s=sum(fields[:8]) / tick, own_s=time.process_time(), wall_s=time.monotonic(),
                     online_cpus=online or (os.cpu_count() or 1))


def system_probes() -> Probes:
    """This machine's load average and /proc/stat."""
    return Probes(_load_average, _proc_stat_sample)


def others_cpus(before: CpuSample, after: CpuSample) -> float:
    """How many CPUs other processes kept busy, on average, between two samples."""
    wall = after.wall_s - before.wall_s
    if wall <= 0:
        return 0.0
    busy = (after.busy_s - before.busy_s) - (after.own_s - before.own_s)
    return max(0.0, busy / wall)


def steal_share(before: CpuSample, after: CpuSample) -> float:
    total = after.total_s - before.total_s
    return max(0.0, (after.steal_s - before.steal_s) / total) if total > 0 else 0.0


@dataclass
class Conditions:
    """The conditions of one problem's measurement, and why they make it noisy (no reason: a clean run)."""

    cpus: int  # CPUs this process may use
    threads: int  # threads the measurement ran on
    load_1m: float | None = None
    steal_share: float | None = None
    others_cpus: float | None = None  # other processes' busy CPUs during the runs, on average
    others_share: float | None = None  # the same, as a share of the machine's CPUs
    waited_s: float = 0.0  # --quiet-wait time spent before the runs
    spread: dict[str, float] = field(default_factory=dict)  # per framework mode: (median - min) / min
    reasons: list[str] = field(default_factory=list)

    @property
    def noisy(self) -> bool:
        return bool(self.reasons)

    def to_json(self) -> dict[str, Any]:
        return {"cpus": self.cpus, "threads": self.threads, "load_1m": _round(self.load_1m),
                "steal_share": _round(self.steal_share), "others_cpus": _round(self.others_cpus),
                "others_share": _round(self.others_share), "waited_s": round(self.waited_s, 3),
                "spread": {k: _round(v) for k, v in self.spread.items()}, "noisy": self.noisy,
                "reasons": self.reasons}


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def spread_of(median_s: float, min_s: float) -> float:
    """How far the median lies above the minimum, as a share of the minimum."""
    return (median_s - min_s) / min_s if min_s > 0 else 0.0


class Monitor:
    """Samples the machine before and after the timed runs of one problem."""

    def __init__(self, probes: Probes, cpus: int, threads: int) -> None:
        self.probes = probes
        self.cpus = max(1, cpus)
        self.threads = max(1, min(threads, self.cpus))
        self.waited_s = 0.0
        self._load: float | None = None
        self._before: CpuSample | None = None

    def wait_for_quiet(self, max_wait_s: float) -> float:
        """Waits up to `max_wait_s` until other processes leave the measurement's threads their CPUs over a
        QUIET_SAMPLE_S window; returns the seconds waited (the last window's time included)."""
        if max_wait_s <= 0:
            return 0.0
        start = self.probes.clock()
        while True:
            first = self.probes.cpu_sample()
            self.probes.sleep(QUIET_SAMPLE_S)
            second = self.probes.cpu_sample()
            waited = self.probes.clock() - start
            if first is None or second is None or not self._crowded(others_cpus(first, second), second):
                break
            if waited >= max_wait_s:
                break
        self.waited_s = waited
        return waited

    def _crowded(self, others: float, sample: CpuSample) -> bool:
        return others > sample.online_cpus - self.threads + OTHERS_SLACK

    def start(self) -> None:
        self._load = self.probes.load_average()
        self._before = self.probes.cpu_sample()

    def finish(self, spreads: dict[str, float]) -> Conditions:
        """The conditions since `start`, with `spreads` the timed runs' spread per framework mode."""
        cond = Conditions(self.cpus, self.threads, load_1m=self._load, waited_s=self.waited_s,
                          spread=dict(spreads))
        after = self.probes.cpu_sample()
        if self._load is not None and self._load > self.cpus:
            cond.reasons.append(f"load {self._load:.2f} on {self.cpus} CPU{'s' if self.cpus > 1 else ''}")
        if self._before is not None and after is not None:
            cond.steal_share = steal_share(self._before, after)
            cond.others_cpus = others_cpus(self._before, after)
            cond.others_share = cond.others_cpus / after.online_cpus
            if cond.steal_share > STEAL_LIMIT:
                cond.reasons.append(f"the hypervisor stole {cond.steal_share:.0%} of the CPU time")
            if self._crowded(cond.others_cpus, after):
                cond.reasons.append(f"other processes kept {cond.others_cpus:.2f} of {after.online_cpus} CPUs "
                                    f"busy ({cond.others_share:.0%}), leaving fewer than the {self.threads} "
                                    "threads measured")
        for mode, spread in spreads.items():
            if spread > SPREAD_LIMIT:
                cond.reasons.append(f"{mode}'s median is {spread:.0%} above its minimum")
        return cond
