"""benchmarks/load_hold.py: busy background processes that hold the machine at a load (for
benchmarks/pipeline.py --six --load N); no timings asserted."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def load_hold() -> ModuleType:
    spec = importlib.util.spec_from_file_location("load_hold", ROOT / "benchmarks" / "load_hold.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["load_hold"] = module
    spec.loader.exec_module(module)
    return module


def test_spinners_top_the_runnable_tasks_up_to_the_target(load_hold: ModuleType) -> None:
    assert load_hold.spinners_needed(4, 0) == 3  # the timed process is the fourth
    assert load_hold.spinners_needed(4, 1.4) == 2
    assert load_hold.spinners_needed(4, 6) == 0  # already busier: none
    assert load_hold.spinners_needed(4, 0, timed=0) == 4
    assert load_hold.spinners_needed(0, 0) == 0


def test_the_holder_starts_its_spinners_and_ends_them(load_hold: ModuleType, monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    monkeypatch.setattr(load_hold.LoadHolder, "others", lambda self, count=5: 0.0)  # as on an idle machine
    with load_hold.LoadHolder(3.0) as hold:
        spinners = list(hold.spinners)
        assert len(spinners) == 2 and all(p.poll() is None for p in spinners)
        hold.target = 2.0
        assert hold.top_up() == 1  # one fewer asked: one ended
        assert sum(p.poll() is None for p in spinners) == 1
    assert all(p.poll() is not None for p in spinners)  # every spinner ended with the holder
    assert hold.spinners == []


def test_runnable_tasks_counts_the_caller(load_hold: ModuleType) -> None:
    if not Path("/proc/stat").exists():
        pytest.skip("no /proc/stat")
    assert load_hold.runnable_tasks() >= 1
