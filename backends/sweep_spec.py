"""What `--sweep` and `--design-space` accept, parsed into values (docs/sweeps.md).

    --sweep 'BATCH=1,2,4..1024'         1, 2, then every integer from 4 to 1024
    --sweep 'CTX=512..131072*2'         512, 1024, …, 131072 (×2 each step)
    --sweep 'S=128..4096+128'           128, 256, …, 4096 (+128 each step)
    --design-space 'bandwidth=0.5..8x,compute=0.5..8x'   factors 0.5, 1, 2, 4, 8 (×2 each step)
    --design-space 'bandwidth=1..4x*1.5,l2=1,2,4x'       ×1.5 steps; a list of factors

A range must not be empty, sizes are positive integers, factors are positive numbers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MAX_POINTS = 1_000_000


class SweepError(ValueError):
    """A point or grid the surface cannot evaluate: an unknown size, a size ≤ 0, too many points."""


def check_axes(params: Sequence[str], axes: Mapping[str, Sequence[int]]) -> None:
    """The grid's sizes are the module's, each with values, and the grid has at most MAX_POINTS points."""
    for name, values in axes.items():
        if name not in params:
            raise SweepError(f"no size parameter {name} (the module has {', '.join(params) or 'none'})")
        if not values:
            raise SweepError(f"the range of {name} is empty")
    total = math.prod(len(v) for v in axes.values())
    if total > MAX_POINTS:
        raise SweepError(f"the grid has {total:,} points, over {MAX_POINTS:,}: narrow a range (fewer values, "
                         "or a larger step such as 1..4096*4) or sweep fewer sizes at once")


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_RANGE = re.compile(r"(?P<lo>.+?)\.\.(?P<hi>[^*+]+)(?:(?P<op>[*+])(?P<step>.+))?\Z")
DESIGN_AXES = ("bandwidth", "compute", "l2")


def _int(text: str, name: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise SweepError(f"{name}: '{text.strip()}' is not an integer (sizes are whole numbers)") from None
    if value <= 0:
        raise SweepError(f"{name}: {value} is not a positive size")
    return value


def sizes(text: str, name: str) -> list[int]:
    """The values of one size: a comma list of integers and ranges `A..B`, `A..B*k` (geometric) or
    `A..B+k` (arithmetic), in order, each value once."""
    values: list[int] = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            raise SweepError(f"{name}: an empty item in '{text}'")
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
        count = (hi - lo) // step + 1 if op == "+" else int(math.log(hi / lo, step)) + 2
        if count > MAX_POINTS:
            raise SweepError(f"{name}: the range {item} has over {MAX_POINTS:,} values: use a larger step "
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
        raise SweepError(f"bad sweep '{spec}': write NAME=VALUES, such as BATCH=1..1024*2")
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
    try:
        value = float(text.strip().rstrip("x"))
    except ValueError:
        raise SweepError(f"{name}: '{text.strip()}' is not a number (a factor such as 0.5 or 2x)") from None
    if not math.isfinite(value) or value <= 0:
        raise SweepError(f"{name}: a factor must be positive, not {text.strip()}")
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
            raise SweepError(f"{name}: the range {item} is empty (write the smaller end first)")
        if ratio <= 1:
            raise SweepError(f"{name}: the ratio of a range of factors must be above 1, not {ratio:g}")
        v = lo
        while v <= hi * (1 + 1e-9):
            values.append(v)
            v *= ratio
            if len(values) > 10_000:
                raise SweepError(f"{name}: the range {item} has too many factors: use a larger ratio")
    return sorted(set(values))


@dataclass(frozen=True)
class DesignSpace:
    """Scale factors of each target's DRAM bandwidth, compute peaks and (cache-aware mode) L2 size."""

    bandwidth: list[float]
    compute: list[float]
    l2: list[float] | None = None


def parse_design_space(spec: str) -> DesignSpace:
    """`bandwidth=0.5..8x,compute=0.5..8x[,l2=1..4x]`: an axis missing stays at 1×."""
    axes: dict[str, list[float]] = {}
    # Split at the commas that start a new `name=`: factor lists contain commas too.
    parts = re.split(r",(?=\s*[A-Za-z_][A-Za-z0-9_]*\s*=)", spec)
    for part in parts:
        name, eq, text = part.partition("=")
        name = name.strip()
        if not eq:
            raise SweepError(f"bad design space '{spec}': write bandwidth=0.5..8x,compute=0.5..8x")
        if name not in DESIGN_AXES:
            raise SweepError(f"unknown design-space axis '{name}': use {', '.join(DESIGN_AXES)}")
        axes[name] = factors(text, name)
    return DesignSpace(axes.get("bandwidth", [1.0]), axes.get("compute", [1.0]), axes.get("l2"))
