"""Placing point labels so that no two overlap, and none covers a point: the roofline's labels, in the PNG
(matplotlib) and in the HTML report (SVG) alike.

Greedy, in a fixed order (the costliest point first, so it keeps the nearest place): each label tries the
eight places around its point at growing distances and takes the first free one inside the plot; a label
that finds none goes to a column in the right margin, stacked, with a leader line to its point. The margin
column is reserved for such labels, so the result never overlaps whatever the points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Offsets around a point, in units of the label's own size: right, above-right, below-right, above, below,
# left, above-left, below-left (the reading order of a scatter plot's labels).
_DIRECTIONS = ((1, 0), (1, -1), (1, 1), (0, -1), (0, 1), (-1, 0), (-1, -1), (-1, 1))
_MAX_CELLS = 1024  # a box spanning more grid cells than this is kept in a list tested for every query
_RINGS = 8  # how far a label may move from its point before it goes to the margin column


@dataclass(frozen=True)
class Box:
    x: float  # left
    y: float  # top (screen coordinates: y grows downwards)
    w: float
    h: float

    def overlaps(self, other: Box) -> bool:
        return (self.x < other.x + other.w and other.x < self.x + self.w
                and self.y < other.y + other.h and other.y < self.y + self.h)

    def inside(self, left: float, top: float, right: float, bottom: float) -> bool:
        return self.x >= left and self.y >= top and self.x + self.w <= right and self.y + self.h <= bottom


@dataclass(frozen=True)
class Placed:
    box: Box
    leader: bool  # drawn away from its point (in the margin column or far off): draw a line to it


def place_labels(points: list[tuple[float, float]], sizes: list[tuple[float, float]],
                 area: tuple[float, float, float, float], margin_x: float, point_radius: float = 4.0,
                 gap: float = 3.0, obstacles: list[Box] | None = None) -> list[Placed]:
    """A box per label (same order as `points`), none overlapping another, any point's marker or any of
    `obstacles` (a legend, say).

    `area` is (left, top, right, bottom) of the plot in screen units; `margin_x` the left edge of the
    column right of it where labels that fit nowhere are stacked."""
    left, top, right, bottom = area
    # Markers and placed labels alike only block: one grid of both answers "is this place free?".
    blocked = _Grid(max(2 * point_radius, max((h for _, h in sizes), default=0.0)) + gap)
    for px, py in points:
        blocked.add(Box(px - point_radius, py - point_radius, 2 * point_radius, 2 * point_radius))
    for box in obstacles or []:
        blocked.add(box)
    out: list[Placed | None] = [None] * len(points)
    column_y = top
    for k, ((px, py), (w, h)) in enumerate(zip(points, sizes, strict=True)):
        chosen: Box | None = None
        for ring in range(_RINGS):
            reach = point_radius + gap + ring * (h + gap)  # each ring one label height further out
            for dx, dy in _DIRECTIONS:
                x = px + dx * reach - (w if dx < 0 else w / 2 if dx == 0 else 0)
                y = py + dy * reach - (h if dy < 0 else h / 2 if dy == 0 else 0)
                box = Box(x, y, w, h)
                if box.inside(left, top, right, bottom) and not blocked.hits(box):
                    chosen = box
                    break
            if chosen is not None:
                out[k] = Placed(chosen, leader=ring > 1)
                break
        if chosen is None:
            chosen = Box(margin_x, column_y, w, h)
            column_y += h + gap
            out[k] = Placed(chosen, leader=True)
        blocked.add(chosen)
    return [p for p in out if p is not None]


class _Grid:
    """Boxes filed under the square cells they touch, so that a query tests only its neighbours: a network's
    hundreds of labels placed in linear rather than quadratic time, with the same answers as testing all."""

    def __init__(self, cell: float) -> None:
        self.cell = cell if cell > 0 and math.isfinite(cell) else 1.0
        self.cells: dict[tuple[int, int], list[Box]] = {}
        self.loose: list[Box] = []  # boxes with a coordinate no cell can hold (infinite, NaN): tested always

    def _span(self, box: Box) -> tuple[range, range] | None:
        ends = (box.x, box.x + box.w, box.y, box.y + box.h)
        if not all(math.isfinite(v) for v in ends):
            return None
        x0, x1, y0, y1 = (math.floor(v / self.cell) for v in ends)
        if (x1 - x0 + 1) * (y1 - y0 + 1) > _MAX_CELLS:  # a box far larger than a label: cheaper tested always
            return None
        return range(x0, x1 + 1), range(y0, y1 + 1)

    def add(self, box: Box) -> None:
        span = self._span(box)
        if span is None:
            self.loose.append(box)
            return
        for i in span[0]:
            for j in span[1]:
                self.cells.setdefault((i, j), []).append(box)

    def hits(self, box: Box) -> bool:
        """Whether `box` overlaps a box added before."""
        span = self._span(box)
        if span is None:
            return any(box.overlaps(b) for boxes in self.cells.values() for b in boxes) \
                or any(box.overlaps(b) for b in self.loose)
        cells = self.cells
        return any(box.overlaps(b) for i in span[0] for j in span[1] for b in cells.get((i, j), ())) \
            or any(box.overlaps(b) for b in self.loose)


def any_overlap(boxes: list[Box]) -> bool:
    """Whether two of `boxes` overlap (what the tests and the PNG's check assert never happens)."""
    return any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
