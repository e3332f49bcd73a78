"""Design-space exploration: the least scaling of a target that meets a latency (the paper's provisioning case).

Each target is scaled: its DRAM bandwidth by `b`, every compute peak by `c` and, for the cache-aware mode, its
L2 by `l` (a tiling search per size, cached). A mode's time on the scaled target is the same roofline,
Σ over units of max(compute_i / c, memory_i / b), so the grid costs one evaluation of the units' times.
The **Pareto front** is the set of scalings that meet the latency and that no other meeting scaling beats
on every axis at once: the least provisioning, e.g. "2× bandwidth at 1× compute, or 1× bandwidth at 8×
compute". A mode that meets the latency nowhere on the grid has an empty front (the report says so).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solar.ir.outputs import save_figure

from .sweep import CACHE_AWARE, CostSurface, ModeArrays
from .sweep_spec import DesignSpace, check_design
from .tiling_ir import resolve_buffer


@dataclass
class Design:
    """One target and mode over the design grid: `seconds[i, j, k]` at bandwidth[i], compute[j], l2[k]."""

    target: str
    mode: str
    latency_s: float
    bandwidth: list[float]
    compute: list[float]
    l2: list[float]
    seconds: np.ndarray
    front: list[dict[str, float]] = field(default_factory=list)

    def as_record(self) -> dict[str, Any]:
        return {"target": self.target, "mode": self.mode, "latency_s": self.latency_s,
                "bandwidth": self.bandwidth, "compute": self.compute, "l2": self.l2,
                "time_s": self.seconds.tolist(), "front": self.front}


def scaled_seconds(a: ModeArrays, bandwidth: list[float], compute: list[float]) -> np.ndarray:
    """Σ_i max(compute_i / c, memory_i / b) at one point (the grid's first) for every (b, c).
    Summed one unit at a time: memory is one (b, c) grid, not one per unit."""
    comp, mem = a.unit_compute, a.unit_memory
    b = np.asarray(bandwidth, dtype=float)[:, None]
    c = np.asarray(compute, dtype=float)[None, :]
    total = np.zeros((len(bandwidth), len(compute)))
    for unit_compute, unit_memory in zip(comp, mem, strict=True):
        total += np.maximum(unit_compute / c, unit_memory / b)
    return total


def pareto_front(design: Design) -> list[dict[str, float]]:
    """The meeting scalings that no other meeting scaling is at most on every axis (and below on one).
    With every axis in increasing order (as parsed), "at most" is "at most in index": a meeting scaling is on
    the front iff it is the only meeting one in the box from the grid's origin to it, a 3-D prefix count,
    O(n) in NumPy. Axes out of order take the sort (`minimal_points`, O(n log n))."""
    meets = design.seconds <= design.latency_s * (1 + 1e-12)
    axes = (design.bandwidth, design.compute, design.l2)
    if all(all(a < b for a, b in itertools.pairwise(axis)) for axis in axes):
        box = meets.astype(np.int64).cumsum(axis=0).cumsum(axis=1).cumsum(axis=2)
        on_front = np.argwhere(meets & (box == 1))
    else:
        where = np.argwhere(meets)
        on_front = where[minimal_points([tuple(float(axes[d][n]) for d, n in enumerate(p)) for p in where])]
    front = [{"bandwidth": design.bandwidth[i], "compute": design.compute[j], "l2": design.l2[k],
              "time_s": float(design.seconds[i, j, k])} for i, j, k in on_front]
    return sorted(front, key=lambda f: (f["bandwidth"], f["compute"], f["l2"]))


def minimal_points(points: list[tuple[float, float, float]]) -> list[int]:
    """The indices of the points that no other point is at most on every axis (and differs from): a sweep
    in lexicographic order, O(n log n). A point can only be dominated by one before it; among those, one
    with compute ≤ its compute and l2 ≤ its l2 exists iff the least l2 over compute ranks up to its own is
    ≤ its l2 (a Fenwick tree of prefix minima over the compute ranks)."""
    order = sorted(range(len(points)), key=lambda n: points[n])
    ranks = {c: r + 1 for r, c in enumerate(sorted({p[1] for p in points}))}
    tree = [math.inf] * (len(ranks) + 1)
    out: list[int] = []
    start = 0
    while start < len(order):
        end = start  # a run of equal points: none dominates another, so they are queried before inserted
        while end < len(order) and points[order[end]] == points[order[start]]:
            end += 1
        _, compute, l2 = points[order[start]]
        r, least = ranks[compute], math.inf
        while r > 0:
            least, r = min(least, tree[r]), r - (r & -r)
        if least > l2:
            out.extend(order[start:end])
        r = ranks[compute]
        while r < len(tree):
            tree[r], r = min(tree[r], l2), r + (r & -r)
        start = end
    return out


def explore(surface: CostSurface, point: dict[str, int], latency_s: float, space: DesignSpace) -> list[Design]:
    """Every target and mode of `surface` at `point` over the scaled targets of `space`."""
    check_design(space, surface.buffer is not None, surface.max_points)
    sweep = surface.grid({k: [v] for k, v in point.items()})
    out: list[Design] = []
    for target, modes in sweep.arrays.items():
        for mode, a in modes.items():
            if mode == CACHE_AWARE and space.l2 is not None:
                continue  # scaled over the L2 below
            seconds = scaled_seconds(a, space.bandwidth, space.compute)[:, :, None]
            out.append(Design(target, mode, latency_s, space.bandwidth, space.compute, [1.0], seconds))
    if space.l2 is not None and surface.buffer is not None:
        out.extend(_over_l2(surface, point, latency_s, space))
    for d in out:
        d.front = pareto_front(d)
    return out


def _over_l2(surface: CostSurface, point: dict[str, int], latency_s: float, space: DesignSpace) -> list[Design]:
    """The cache-aware mode with the L2 scaled: one surface (a tiling search) per target and L2 size."""
    assert space.l2 is not None and surface.buffer is not None
    out = []
    for target in surface.targets:
        base = resolve_buffer(surface.buffer, target)
        layers = []
        for factor in space.l2:
            scaled = CostSurface(surface.module, [target], fp32_precision=surface.fp32_precision,
                                 precision_floor=surface.precision_floor,
                                 buffer=str(int(base * factor)), max_points=surface.max_points)
            a = scaled.grid({k: [v] for k, v in point.items()}).arrays[target.name][CACHE_AWARE]
            layers.append(scaled_seconds(a, space.bandwidth, space.compute))
        out.append(Design(target.name, CACHE_AWARE, latency_s, space.bandwidth, space.compute, list(space.l2),
                          np.stack(layers, axis=-1)))
    return out


def render_designs(designs: list[Design]) -> str:
    lines = ["Design space: the least scaling (× bandwidth, × compute[, × L2]) that meets the latency"]
    for d in designs:
        if not d.front:
            lines.append(f"  {d.target} {d.mode}: not met on this grid (at most ×{max(d.bandwidth):g} bandwidth, "
                         f"×{max(d.compute):g} compute)")
            continue
        l2 = len(d.l2) > 1
        front = ", ".join(f"{f['bandwidth']:g}×bw {f['compute']:g}×compute" + (f" {f['l2']:g}×L2" if l2 else "")
                          for f in d.front)
        lines.append(f"  {d.target} {d.mode}: {front}")
    return "\n".join(lines) + "\n"


def plot_designs(designs: list[Design], path: str) -> None:
    """One heat map per target and mode: time ÷ latency over (bandwidth, compute) at the first L2 factor,
    the latency's contour and the Pareto front marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(designs)
    cols = min(n, 4)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.5 * cols, 4 * rows), squeeze=False)
    for ax, d in zip(axes.flat, designs, strict=False):
        ratio = d.seconds[:, :, 0] / d.latency_s
        mesh = ax.pcolormesh(d.compute, d.bandwidth, np.log2(ratio), shading="nearest", cmap="RdYlGn_r")
        fig.colorbar(mesh, ax=ax, label="log2(time / latency)")
        if len(d.compute) > 1 and len(d.bandwidth) > 1:
            ax.contour(d.compute, d.bandwidth, ratio, levels=[1.0], colors="black", linewidths=1)
        front = [f for f in d.front if f["l2"] == d.l2[0]]
        ax.plot([f["compute"] for f in front], [f["bandwidth"] for f in front], "k*", markersize=9,
                label="Pareto front")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("compute ×")
        ax.set_ylabel("bandwidth ×")
        ax.set_title(f"{d.target} {d.mode}", fontsize=9)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.tight_layout()
    try:
        save_figure(fig, path, "the design-space plot", dpi=110)
    finally:
        plt.close(fig)
