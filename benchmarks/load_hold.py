"""Holding the machine at a load: busy background processes, so that a timing is taken at the load another
tool's figures were taken at (NVIDIA's SOLAR was timed here at load 4 on 2 cores, ../shared/FACTS.md).

    with LoadHolder(4.0) as hold:      # tops the runnable tasks up to 4, the timed process counted as one
        ...time something...
        hold.top_up()                  # before each timing: other users' tasks come and go
    print(hold.held())                 # the runnable tasks sampled while it held, the sampler not counted

The load average is a one-minute moving average, slow to follow a change, so what a holder measures is the
kernel's instantaneous count of runnable tasks (`procs_running` in /proc/stat), sampled every
`SAMPLE_S` seconds on a thread; the one-minute average is printed beside it by the caller. The spinners are
plain Python loops at normal priority (what a busy neighbour is) and are ended by their process ids.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import threading
import time
from types import TracebackType

SAMPLE_S = 0.2
SPIN = "while True:\n    pass\n"


def runnable_tasks() -> int:
    """The tasks running or ready to run now, system wide (/proc/stat `procs_running`; the caller is one)."""
    with open("/proc/stat", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("procs_running "):
                return int(line.split()[1])
    raise OSError("/proc/stat has no procs_running line")


def spinners_needed(target: float, others: float, timed: int = 1) -> int:
    """Spinners that bring the runnable tasks to `target`: `others` are running already (the sampler not
    counted), `timed` more will be the process being timed."""
    return max(0, round(target - others - timed))


class LoadHolder:
    """Busy background processes that hold the runnable tasks near `target` while timings run."""

    def __init__(self, target: float, timed: int = 1) -> None:
        self.target = target
        self.timed = timed
        self.spinners: list[subprocess.Popen[bytes]] = []
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None

    def others(self, count: int = 5) -> float:
        """The median of `count` samples of the tasks running besides this holder's spinners and the sampler."""
        seen = []
        for _ in range(count):
            seen.append(runnable_tasks() - 1 - self._alive())
            time.sleep(SAMPLE_S / 2)
        return max(0.0, statistics.median(seen))

    def _alive(self) -> int:
        return sum(p.poll() is None for p in self.spinners)

    def top_up(self) -> int:
        """Starts or ends spinners so that the runnable tasks (the timed process counted) come to the target;
        returns how many spin now."""
        want = spinners_needed(self.target, self.others(), self.timed)
        self.spinners = [p for p in self.spinners if p.poll() is None]
        while len(self.spinners) < want:
            self.spinners.append(subprocess.Popen([sys.executable, "-c", SPIN], stdin=subprocess.DEVNULL,
                                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        while len(self.spinners) > want:
            self._end(self.spinners.pop())
        return len(self.spinners)

    def reset_samples(self) -> None:
        self.samples.clear()

    def held(self) -> float:
        """The mean of the runnable tasks sampled since the last reset, the sampler not counted (0 if none)."""
        return statistics.fmean(self.samples) if self.samples else 0.0

    def _sample(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self.samples.append(runnable_tasks() - 1)

    @staticmethod
    def _end(proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def __enter__(self) -> LoadHolder:
        self.top_up()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        if self._sampler is not None:
            self._sampler.join()
        for proc in self.spinners:
            self._end(proc)
        self.spinners.clear()
