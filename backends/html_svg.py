"""Inline SVG charts of the HTML report: the roofline of one target (points labelled without overlaps,
backends/label_layout.py) and sweep curves. Drawn from the `--sol-report` document's numbers alone."""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from typing import Any

from solar.backends.label_layout import place_labels
from solar.backends.report import achieved_points, quantity, ratio, seconds

WIDTH, HEIGHT = 760, 420
PLOT = (70, 20, 560, 370)  # left, top, right, bottom of the axes; labels that fit nowhere go right of it
CHAR_W, LABEL_H = 6.2, 12.0  # an 11px sans-serif label's average character width and its line height
CURVE_POINTS = 2000  # the most points drawn per sweep curve: a page stays small at a million-point sweep
_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")


def _log_scale(lo: float, hi: float, a: float, b: float) -> Any:
    span = math.log10(hi) - math.log10(lo)
    return lambda v: a + (math.log10(v) - math.log10(lo)) / span * (b - a)


def _decades(lo: float, hi: float) -> list[float]:
    """The powers of ten from `lo` to `hi`."""
    return [10.0 ** d for d in range(math.ceil(math.log10(lo)), math.floor(math.log10(hi)) + 1)]


def _x_ticks(values: list[float], sx: Callable[[float], float], label: Callable[[float], str]) -> list[str]:
    """A tick below the plot at each value, with its label."""
    bottom = PLOT[3]
    return [f'<line x1="{sx(v):.1f}" y1="{bottom}" x2="{sx(v):.1f}" y2="{bottom + 4}" stroke="#99a"/>'
            f'<text x="{sx(v):.1f}" y="{bottom + 16}" text-anchor="middle">{label(v)}</text>' for v in values]


def _y_ticks(values: list[float], sy: Callable[[float], float], label: Callable[[float], str]) -> list[str]:
    """A tick left of the plot at each value, with its label."""
    left = PLOT[0]
    return [f'<line x1="{left - 4}" y1="{sy(v):.1f}" x2="{left}" y2="{sy(v):.1f}" stroke="#99a"/>'
            f'<text x="{left - 6}" y="{sy(v) + 4:.1f}" text-anchor="end">{label(v)}</text>' for v in values]


def label_width(text: str) -> float:
    return len(text) * CHAR_W + 4


def measured_points(target: dict[str, Any], measured: dict[str, Any] | None) -> list[tuple[float, float, str, float]]:
    """(intensity, achieved FLOP/s, label, fused SOL's FLOP/s) of each framework mode measured on this
    target's machine: the whole program at its fused intensity, under the roof its SOL point sits on."""
    return achieved_points(target["name"], target["modes"]["fused"], measured)


# Longer than most: one SVG's layers (axes, roofs, units, groups, achieved points, labels) drawn in order on shared
# scales.
def roofline_svg(target: dict[str, Any], measured: dict[str, Any] | None = None) -> str:
    """The roofline of one target of the document: a roof per peak its units use, every unit (dot) and
    fusion group (square) at its intensity and the FLOP rate its SOL implies; after a measurement, each
    framework mode's achieved point (hollow) joined to the fused SOL's."""
    beta = target["dram_bandwidth"]
    achieved = measured_points(target, measured)
    points = []
    for kind, works in (("unit", target["units"]), ("group", target["groups"])):
        for w in works:
            flops = sum(w["flops_tensor"].values()) + sum(w["flops_vector"].values())
            if w["bytes"] and w["time_s"] and flops and w["intensity"]:
                points.append((w["intensity"], flops / w["time_s"], w["name"], kind, w["time_s"]))
    roofs = sorted({(p["precision"], p["unit"], p["flop_per_s"]) for w in target["units"] for p in w["peaks"]})
    if not points:
        return '<p class="note">no unit does arithmetic on DRAM data: nothing to place on the roofline.</p>'
    xs = [p[0] for p in points]
    peak_hi = max([r[2] for r in roofs] or [max(p[1] for p in points)])
    x_lo, x_hi = min([*xs, 0.1]) / 4, max([*xs, 1000.0]) * 4
    y_lo = min([beta * x_lo, *(p[1] for p in points), *(a[1] for a in achieved)]) / 2
    y_hi = peak_hi * 2
    left, top, right, bottom = PLOT
    sx, sy = _log_scale(x_lo, x_hi, left, right), _log_scale(y_lo, y_hi, bottom, top)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} '
           f'{HEIGHT}" font-family="sans-serif" font-size="11">',
           f'<rect x="{left}" y="{top}" width="{right - left}" height="{bottom - top}" fill="none" stroke="#99a"/>']
    out += _x_ticks(_decades(x_lo, x_hi), sx, quantity)
    out += _y_ticks(_decades(y_lo, y_hi), sy, quantity)
    out.append(f'<text x="{(left + right) / 2}" y="{HEIGHT - 8}" text-anchor="middle">arithmetic intensity '
               f'(FLOP/byte)</text><text x="14" y="{(top + bottom) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(top + bottom) / 2})">FLOP/s at the speed of light</text>')
    for k, (precision, unit, peak) in enumerate(roofs):
        colour = _COLOURS[k % len(_COLOURS)]
        knee = peak / beta
        flat = min(peak, beta * x_hi)
        path = [(x_lo, beta * x_lo), (min(max(knee, x_lo), x_hi), flat), (x_hi, flat)]
        d = " ".join(f"{'M' if i == 0 else 'L'}{sx(x):.1f},{sy(max(y, y_lo)):.1f}" for i, (x, y) in enumerate(path))
        out.append(f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="1.5"/>'
                   f'<text x="{right + 8}" y="{top + 14 + 14 * k}" fill="{colour}">{html.escape(precision)} '
                   f'{html.escape(unit)}: {quantity(peak, "FLOP/s")}</text>')
    order = sorted(range(len(points)), key=lambda i: -points[i][4])  # the costliest keeps the nearest place
    screen = [(sx(points[i][0]), sy(points[i][1])) for i in order]
    sizes = [(label_width(points[i][2]), LABEL_H) for i in order]
    legend_h = 14 * len(roofs) + 20
    placed = place_labels(screen, sizes, (left, top, right, bottom), right + 8)
    for (px, py), i, spot in zip(screen, order, placed, strict=True):
        _, _, name, kind, _ = points[i]
        marker = (f'<circle cx="{px:.1f}" cy="{py:.1f}" r="4" fill="#334"/>' if kind == "unit" else
                  f'<rect x="{px - 4:.1f}" y="{py - 4:.1f}" width="8" height="8" fill="#a33"/>')
        box = spot.box
        y = box.y + (legend_h if box.x >= right else 0)  # the margin column starts below the roofs' legend
        if spot.leader:
            out.append(f'<line x1="{px:.1f}" y1="{py:.1f}" x2="{box.x:.1f}" y2="{y + box.h / 2:.1f}" '
                       f'stroke="#bbc" stroke-width="0.8"/>')
        out.append(marker + f'<text class="point-label" x="{box.x + 2:.1f}" y="{y + box.h - 3:.1f}" '
                   f'data-box="{box.x:.1f},{y:.1f},{box.w:.1f},{box.h:.1f}">{html.escape(name)}</text>')
    for k, (x, y, name, sol) in enumerate(achieved):
        px, py, top_y = sx(x), sy(y), sy(sol)
        out.append(f'<line x1="{px:.1f}" y1="{py:.1f}" x2="{px:.1f}" y2="{top_y:.1f}" stroke="#a33" '
                   f'stroke-dasharray="4 3"/><rect x="{px - 4:.1f}" y="{top_y - 4:.1f}" width="8" height="8" '
                   f'fill="none" stroke="#a33"/><circle class="measured-point" cx="{px:.1f}" cy="{py:.1f}" r="5" '
                   f'fill="#fff" stroke="#a33" stroke-width="2"/><text x="{px + 8:.1f}" y="{py + 4 + 12 * k:.1f}" '
                   f'fill="#a33">{html.escape(name)} ({ratio(sol / y)} under the fused SOL)</text>')
    out.append("</svg>")
    return "".join(out)


def drawn_indices(n: int, limit: int = CURVE_POINTS) -> list[int]:
    """At most `limit` of `n` indices, evenly spaced, the first and the last included."""
    if n <= limit:
        return list(range(n))
    return sorted({round(k * (n - 1) / (limit - 1)) for k in range(limit)})


def curves_svg(curve: dict[str, Any]) -> str:
    """One sweep: `{"name", "x" (the swept parameter), "points" (its values), "series": {mode: [seconds]}}`
    on log-log axes; past CURVE_POINTS values, CURVE_POINTS of them evenly spaced (the title says so)."""
    keep = drawn_indices(len(curve["points"]))
    xs = [float(curve["points"][k]) for k in keep]
    series = {m: [float(ts[k]) for k in keep] for m, ts in curve["series"].items()}
    thinned = f"; {len(keep):,} of {len(curve['points']):,} points drawn" if len(keep) < len(curve["points"]) else ""
    ys = [t for ts in series.values() for t in ts if t > 0]
    if len(xs) < 2 or not ys or min(xs) <= 0:
        return ""
    left, top, right, bottom = PLOT
    sx = _log_scale(min(xs), max(xs), left, right) if max(xs) > min(xs) else (lambda v: (left + right) / 2)
    lo, hi = min(ys) / 1.5, max(ys) * 1.5
    sy = _log_scale(lo, hi, bottom, top)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="sweep" width="{WIDTH}" height="{HEIGHT}" '
           f'font-family="sans-serif" font-size="11"><rect x="{left}" y="{top}" width="{right - left}" '
           f'height="{bottom - top}" fill="none" stroke="#99a"/>'
           f'<text x="{(left + right) / 2}" y="{HEIGHT - 8}" text-anchor="middle">{html.escape(str(curve["x"]))}'
           f"</text>"]
    out += _x_ticks(xs, sx, quantity)
    out += _y_ticks(_decades(lo, hi), sy, seconds)
    for k, (mode, ts) in enumerate(series.items()):
        colour = _COLOURS[k % len(_COLOURS)]
        d = " ".join(f"{'M' if i == 0 else 'L'}{sx(x):.1f},{sy(t):.1f}"
                     for i, (x, t) in enumerate(zip(xs, ts, strict=True)) if t > 0)
        out.append(f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="1.5"/>'
                   f'<text x="{right + 8}" y="{top + 14 + 14 * k}" fill="{colour}">{html.escape(mode)}</text>')
    for x, t, name in curve.get("unfit", []):  # points that do not fit in memory (solar-llm): a red cross
        if t > 0 and min(xs) <= x <= max(xs):
            px, py = sx(x), sy(t)
            out.append(f'<path class="unfit-point" d="M{px - 5:.1f},{py - 5:.1f}L{px + 5:.1f},{py + 5:.1f}'
                       f'M{px - 5:.1f},{py + 5:.1f}L{px + 5:.1f},{py - 5:.1f}" stroke="#b00020" stroke-width="2">'
                       f"<title>{html.escape(str(name))}: does not fit</title></path>")
    out.append(f'<text x="{left + 4}" y="{top + 14}">{html.escape(str(curve.get("name", "")))} '
               f"(SOL time, log-log{thinned})</text></svg>")
    return "".join(out)


def sweep_curves(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The curves of a sweep document (`--sweep-report`'s): per target and swept size, each mode's time along
    that size with the other swept sizes at their first values."""
    axes: dict[str, list[int]] = doc.get("swept") or {}
    first = {name: values[0] for name, values in axes.items()}
    curves = []
    for target in doc["targets"]:
        for name, values in axes.items():
            if len(values) < 2:
                continue
            series: dict[str, dict[int, float]] = {}
            for rec in doc["records"]:
                point = rec["point"]
                if rec["target"] == target and all(point.get(k) == v for k, v in first.items() if k != name):
                    series.setdefault(rec["mode"], {})[point[name]] = rec["time_s"]
            curves.append({"name": f"{target}: SOL against {name}", "x": name, "points": values,
                           "series": {m: [ts.get(v, 0.0) for v in values] for m, ts in series.items()}})
    return curves
