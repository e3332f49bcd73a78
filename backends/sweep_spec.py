"""What `--sweep` and `--design-space` accept, parsed into values (docs/sweeps.md).

    --sweep 'BATCH=1,2,4..1024'         1, 2, then every integer from 4 to 1024
    --sweep 'CTX=512..131072*2'         512, 1024, …, 131072 (×2 each step)
    --sweep 'S=128..4096+128'           128, 256, …, 4096 (+128 each step)
    --design-space 'bandwidth=0.5..8x,compute=0.5..8x'   factors 0.5, 1, 2, 4, 8 (×2 each step)
    --design-space 'bandwidth=1..4x*1.5,l2=1,2,4x'       ×1.5 steps; a list of factors

A range must not be empty, sizes are positive integers below 2^63 (as `--bind-params` takes them), factors are
positive finite numbers, and each axis of a design space is named once.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from solar.ir.limits import INT_MAX

MAX_POINTS = 1_000_000  # the most points of a sweep, and the most scalings of a design space
CACHE_AWARE_POINTS = 1_000  # the cache-aware mode runs a tiling search per point: past this, --max-points


class SweepError(ValueError):
    """A point or grid the surface cannot evaluate: an unknown size, a size ≤ 0, too many points."""


def point_limit(cache_aware: bool, max_points: int | None) -> int:
    """The most points a grid may have: `max_points` where given (at most MAX_POINTS), else MAX_POINTS, or
    CACHE_AWARE_POINTS when each point needs a tiling search."""
    if max_points is not None:
        if max_points <= 0 or max_points > MAX_POINTS:
            raise SweepError(f"--max-points must be from 1 to {MAX_POINTS:,}, not {max_points:,}")
        return max_points
    return CACHE_AWARE_POINTS if cache_aware else MAX_POINTS


def check_axes(params: Sequence[str], axes: Mapping[str, Sequence[int]], cache_aware: bool = False,
               max_points: int | None = None) -> None:
    """The grid's sizes are the module's, each with values, and the grid has at most `point_limit` points."""
    for name, values in axes.items():
        if name not in params:
            raise SweepError(f"no size parameter {name} (the module has {', '.join(params) or 'none'})")
        if not values:
            raise SweepError(f"the range of {name} is empty")
    total = math.prod(len(v) for v in axes.values())
    limit = point_limit(cache_aware, max_points)
    if total > limit and cache_aware and max_points is None and total <= MAX_POINTS:
        raise SweepError(f"the grid has {total:,} points, over {limit:,} for the cache-aware mode (a tiling "
                         f"search at each point): give --max-points={total} to run them all, or narrow a range")
    if total > limit:
        over = f"--max-points={limit}" if max_points is not None else f"{limit:,}"
        raise SweepError(f"the grid has {total:,} points, over {over}: narrow a range (fewer values, "
                         "or a larger step such as 1..4096*4) or sweep fewer sizes at once")


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_RANGE = re.compile(r"(?P<lo>.+?)\.\.(?P<hi>[^*+]+)(?:(?P<op>[*+])(?P<step>.+))?\Z")
DESIGN_AXES = ("bandwidth", "compute", "l2")


def _shown(text: str, unit: str = "digits") -> str:
    """`text` as an error line quotes it: control characters escaped (a newline would break the one line),
    and a long text cut to its start and length."""
    text = text if text.isprintable() else text.encode("unicode_escape").decode("ascii")
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} {unit})"


def _int(text: str, name: str) -> int:
    text = text.strip()
    digits = text.lstrip("+")
    try:  # over 19 digits is beyond 64 bits (and Python would not convert 4,301 of them)
        value = INT_MAX + 1 if digits.isdigit() and len(digits.lstrip("0")) > 19 else int(text)
    except ValueError:
        raise SweepError(f"{name}: '{_shown(text)}' is not an integer (sizes are whole numbers)") from None
    if value <= 0:
        raise SweepError(f"{name}: {value} is not a positive size")
    if value > INT_MAX:  # as --bind-params: sizes are int64 in ISL and the executor
        raise SweepError(f"{name}: {_shown(text)} is out of range: a size must fit in 64 bits "
                         f"(at most 2^63 - 1 = {INT_MAX})")
    return value


def _range_count(lo: int, hi: int, op: str, step: int) -> int:
    """How many values `lo..hi` steps through, in integers (no float: an end may be near 2^63)."""
    if op == "+":
        return (hi - lo) // step + 1
    count, v = 0, lo
    while v <= hi:
        count, v = count + 1, v * step
    return count


def sizes(text: str, name: str) -> list[int]:
    """The values of one size: a comma list of integers and ranges `A..B`, `A..B*k` (geometric) or
    `A..B+k` (arithmetic), in order, each value once."""
    values: list[int] = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            raise SweepError(f"{name}: an empty item in '{_shown(text, 'characters')}'")
        m = _RANGE.match(item)
        if m is None:
            values.append(_int(item, name))
            continue
        lo, hi = _int(m["lo"], name), _int(m["hi"], name)
        if lo > hi:
            raise SweepError(f"{name}: the range {lo}..{hi} is empty (write the smaller end first)")
        op, step = m["op"] or "+", _int(m["step"], name) if m["step"] else 1
        if op == "*" and step < 2:
            raise SweepError(f"{name}: a geometric step must be at least 2, not {step}")
        if _range_count(lo, hi, op, step) > MAX_POINTS:
            raise SweepError(f"{name}: the range {_shown(item, 'characters')} has over {MAX_POINTS:,} values: use a "
                             f"larger step "
                             f"(such as {lo}..{hi}*2)")
        v = lo
        while v <= hi:
            values.append(v)
            v = v + step if op == "+" else v * step
    return list(dict.fromkeys(values))


def parse_sweep(spec: str) -> tuple[str, list[int]]:
    """`NAME=VALUES` (see `sizes`)."""
    name, eq, text = spec.partition("=")
    name = name.strip()
    if not eq or not _NAME.match(name):
        raise SweepError(f"bad sweep '{_shown(spec, 'characters')}': write NAME=VALUES, such as BATCH=1..1024*2")
    return name, sizes(text, name)


def parse_sweeps(specs: list[str]) -> dict[str, list[int]]:
    axes: dict[str, list[int]] = {}
    for spec in specs:
        name, values = parse_sweep(spec)
        if name in axes:
            raise SweepError(f"{name} is swept twice: give all its values in one --sweep")
        axes[name] = values
    return axes


def _factor(text: str, name: str) -> float:
    text = text.strip()
    try:
        value = float(text.rstrip("x"))
    except ValueError:
        raise SweepError(f"{name}: '{_shown(text)}' is not a number (a factor such as 0.5 or 2x)") from None
    if math.isinf(value) and value > 0:
        raise SweepError(f"{name}: the factor {_shown(text)} is too large for a float")
    if not math.isfinite(value) or value <= 0:
        raise SweepError(f"{name}: a factor must be positive, not {_shown(text)}")
    return value


def factors(text: str, name: str) -> list[float]:
    """Scale factors: a comma list of numbers and ranges `A..Bx` (×2 steps) or `A..Bx*r` (×r steps)."""
    values: list[float] = []
    for item in text.split(","):
        item = item.strip()
        m = _RANGE.match(item)
        if m is None:
            values.append(_factor(item, name))
            continue
        lo, hi = _factor(m["lo"], name), _factor(m["hi"], name)
        if m["op"] == "+":
            raise SweepError(f"{name}: factors step by a ratio (A..Bx*1.5), not by '+'")
        ratio = _factor(m["step"], name) if m["step"] else 2.0
        if lo > hi:
            raise SweepError(f"{name}: the range {_shown(item, 'characters')} is empty (write the smaller end first)")
        if ratio <= 1:
            raise SweepError(f"{name}: the ratio of a range of factors must be above 1, not {ratio:g}")
        v = lo
        while v <= hi * (1 + 1e-9):
            values.append(v)
            v *= ratio
            if len(values) > 10_000:
                raise SweepError(f"{name}: the range {_shown(item, 'characters')} has too many factors: use a "
                                 "larger ratio")
    return sorted(set(values))


@dataclass(frozen=True)
class DesignSpace:
    """Scale factors of each target's DRAM bandwidth, compute peaks and (cache-aware mode) L2 size."""

    bandwidth: list[float]
    compute: list[float]
    l2: list[float] | None = None

    @property
    def scalings(self) -> int:
        return len(self.bandwidth) * len(self.compute) * len(self.l2 or [1.0])


def parse_design_space(spec: str) -> DesignSpace:
    """`bandwidth=0.5..8x,compute=0.5..8x[,l2=1..4x]`: an axis missing stays at 1×; each axis once, and at most
    MAX_POINTS scalings in all."""
    if not spec.strip():
        raise SweepError("an empty --design-space: write bandwidth=0.5..8x,compute=0.5..8x")
    axes: dict[str, list[float]] = {}
    # Split at the commas that start a new `name=`: factor lists contain commas too.
    parts = re.split(r",(?=\s*[A-Za-z_][A-Za-z0-9_]*\s*=)", spec)
    for part in parts:
        name, eq, text = part.partition("=")
        name = name.strip()
        if not eq:
            raise SweepError(f"bad design space '{_shown(spec, 'characters')}': write "
                             "bandwidth=0.5..8x,compute=0.5..8x")
        if name not in DESIGN_AXES:
            raise SweepError(f"unknown design-space axis '{_shown(name, 'characters')}': use {', '.join(DESIGN_AXES)}")
        if name in axes:
            raise SweepError(f"the design-space axis {name} is given twice: give all its factors in one {name}=")
        axes[name] = factors(text, name)
    space = DesignSpace(axes.get("bandwidth", [1.0]), axes.get("compute", [1.0]), axes.get("l2"))
    if space.scalings > MAX_POINTS:
        raise SweepError(f"the design space has {space.scalings:,} scalings, over {MAX_POINTS:,}: use fewer "
                         "factors (a larger ratio, such as 0.5..8x*4)")
    return space


def check_design(space: DesignSpace, cache_aware: bool, max_points: int | None = None) -> None:
    """An L2 axis needs the cache-aware mode (it scales that mode's buffer), and each L2 factor is a tiling
    search per target: as many as a cache-aware sweep may have points."""
    if space.l2 is None:
        return
    if not cache_aware:
        raise SweepError("the design-space axis l2 scales the cache-aware mode's buffer: run --tile-search before "
                         "--sol, or drop l2=")
    limit = point_limit(True, max_points)
    if len(space.l2) > limit:
        raise SweepError(f"l2 has {len(space.l2):,} factors, over {limit:,} (a tiling search each): use a larger "
                         f"ratio" + (f", or give --max-points={len(space.l2)}" if max_points is None else ""))
