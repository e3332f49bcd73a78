"""Shared pieces of the surface fuzzers (issue 36, item 6): how many examples a run draws, and the values a
mutated field or argument takes. CI draws a fixed set; `SOLAR_FUZZ_EXAMPLES=N` draws N new ones per test
(docs/design/fuzzing.md)."""

from __future__ import annotations

import math
import os
import random
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import settings

LONG_RUN = int(os.environ.get("SOLAR_FUZZ_EXAMPLES", "0") or 0)
SEED = int(os.environ.get("SOLAR_FUZZ_SEED", "0") or 0)


def examples(ci: int) -> int:
    """`ci` examples in CI and plain `pytest`; the long run's count when SOLAR_FUZZ_EXAMPLES is set."""
    return LONG_RUN or ci


def fuzz_settings(ci: int) -> settings:
    """Hypothesis settings: the same `ci` examples every run, or a long run's fresh draw."""
    return settings(max_examples=examples(ci), derandomize=not LONG_RUN, deadline=None, database=None)


# Values that are wrong in some way for almost any field: types, signs, sizes, floats that are not numbers.
ODD_VALUES: list[Any] = [None, True, False, 0, -1, -7, 1, 2, 3, 5, 2**31, 2**63, 10**30, 0.5, 1.5, -0.0,
                         math.nan, math.inf, -math.inf, "", "7", "abc", "float32", [], [1, 2], {}, {"a": 1}]


def odd_value(rng: random.Random, current: Any = None) -> Any:
    """A value of a wrong kind, or a nearby wrong size of `current` when it is an integer."""
    if isinstance(current, int) and not isinstance(current, bool) and rng.random() < 0.4:
        return rng.choice([current * 2, current + 1, current - 1, current * 1000, -current, current // 3])
    return rng.choice(ODD_VALUES)


class TooSlow(Exception):
    """An input that ran past its time limit: a finding (a check that should refuse it at once)."""


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Raises TooSlow in the main thread after `seconds` (pytest and its xdist workers run tests there)."""
    def _expired(signum: int, frame: Any) -> None:
        raise TooSlow(f"over {seconds} s")

    old = signal.signal(signal.SIGALRM, _expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def one_line(text: str) -> bool:
    """A user error is one line (a located diagnostic may add its source line and caret)."""
    lines = text.rstrip("\n").split("\n")
    return bool(lines[0].strip()) and (len(lines) == 1 or (len(lines) <= 3 and ": error: " in lines[0]))


Check = Callable[[Any], None]
