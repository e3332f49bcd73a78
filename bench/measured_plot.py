"""`solar-bench PATH --measured FILE --plot FILE.png` (docs/bench.md): times measured elsewhere on the roofline.
Per target a panel: the roofs the bounds were priced under (DRAM bandwidth, each peak the problems used), each
problem's fused SOL as a filled square on its roof at its fused intensity, and its measured time as a hollow
circle under it at the same intensity (FLOPs ÷ measured time), joined by a dashed line; the farthest and
every violation named. Every label is the one formatter's (backends/report.py)."""

from __future__ import annotations

from typing import Any

from solar.backends.report import format_axis, quantity, ratio
from solar.ir.outputs import save_figure

from .measured import MeasuredRun, Verdict

NAMED = 3  # the problems farthest under their SOL named per panel, with every violation
NAME_CHARS = 28


def placed(run: MeasuredRun) -> dict[str, list[Verdict]]:
    """The verdicts that have a place on the roofline (FLOPs and fused bytes known, a fused bound), by target."""
    out: dict[str, list[Verdict]] = {}
    for v in run.verdicts:
        fused = next((c for c in v.comparisons if c.mode == "fused"), None)
        if v.flops > 0 and v.fused_bytes > 0 and fused is not None and fused.plain_s > 0 and v.time.min_s > 0:
            out.setdefault(v.time.target, []).append(v)
    return out


def plot_measured(run: MeasuredRun, path: str) -> str | None:
    """Draws the plot to `path`; returns None, or (nothing to place) the reason its place shows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = placed(run)
    if not panels:
        reason = (f"no measured time has a place on the roofline ({len(run.verdicts)} time(s) joined to a bound, "
                  "none with FLOPs, bytes and a fused bound)")
        fig, ax = plt.subplots(figsize=(6.5, 4.5))
        ax.axis("off")
        ax.text(0.5, 0.5, "No roofline:\n" + reason.replace(" (", "\n(", 1), ha="center", va="center", wrap=True)
        _save(fig, path)
        return reason
    fig, axes = plt.subplots(1, len(panels), figsize=(8 * len(panels), 5.5), squeeze=False)
    for ax, (target, verdicts) in zip(axes[0], sorted(panels.items()), strict=True):
        _panel(ax, target, verdicts, run.roofs.get(target))
    fig.tight_layout()
    _save(fig, path)
    return None


def _save(fig: Any, path: str) -> None:
    import matplotlib.pyplot as plt

    try:
        save_figure(fig, path, "the plot", dpi=120)
    finally:
        plt.close(fig)


def _panel(ax: Any, target: str, verdicts: list[Verdict], roofs: tuple[float, dict[tuple[str, str], float]] | None
           ) -> None:
    points = []
    for v in verdicts:
        fused = next(c for c in v.comparisons if c.mode == "fused")
        x = v.flops / v.fused_bytes
        points.append((v, x, v.flops / fused.plain_s, v.flops / v.time.min_s))
    xs = [x for _, x, _, _ in points]
    lo, hi = min(xs) / 4, max(xs) * 4
    if roofs is not None:
        beta, peaks = roofs
        grid = [lo * (hi / lo) ** (k / 200) for k in range(201)]
        for (precision, unit), peak in sorted(peaks.items()):
            ax.plot(grid, [min(peak, beta * g) for g in grid], linewidth=1,
                    label=f"{precision} {unit}: {quantity(peak, 'FLOP/s')}")
    for _, x, sol, achieved in points:
        ax.plot([x, x], [achieved, sol], color="#a33", linestyle="--", linewidth=1, zorder=3)
    ax.scatter(xs, [sol for _, _, sol, _ in points], marker="s", color="#333", zorder=4, label="fused SOL")
    ax.scatter(xs, [a for _, _, _, a in points], s=60, facecolors="white", edgecolors="#a33", linewidths=1.5,
               zorder=5, label="measured (hollow)", gid="measured-points")
    far = sorted(points, key=lambda p: p[2] / p[3], reverse=True)[:NAMED]
    for v, x, sol, achieved in {id(p[0]): p for p in [*far, *(p for p in points if p[0].violation)]}.values():
        name = v.time.problem.rsplit("/", 1)[-1]
        name = name if len(name) <= NAME_CHARS else name[:NAME_CHARS - 1] + "…"
        ax.annotate(f"{name} {v.time.framework}: {ratio(sol / achieved)} under", (x, achieved), xytext=(6, -10),
                    textcoords="offset points", fontsize=7, color="#a33", gid="measured-label")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    format_axis(ax.xaxis, quantity)
    format_axis(ax.yaxis, lambda v: quantity(v, "FLOP/s"))
    ax.set_xlabel("arithmetic intensity of the fused program (FLOP/byte)")
    ax.set_ylabel("FLOP/s")
    ax.set_title(f"{target}: {len(points)} measured time(s) under their fused SOL")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
