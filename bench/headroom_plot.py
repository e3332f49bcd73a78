"""The batch's headroom plot (`solar-bench DIR --plot FILE.png`, docs/bench.md): per framework mode and target,
the problems sorted by measured ÷ SOL, one series per SOL mode, the outliers named. Records measured on a busy
machine are left out unless `--keep-noisy` asks for them, and then drawn hollow; a plot with nothing to draw
says in its place why it is empty. Every label is the one formatter's (backends/report.py)."""

from __future__ import annotations

import statistics
from typing import Any

from solar.backends.report import format_axis, ratio
from solar.ir.outputs import save_figure

from .bounds import MODE_LABELS as LABELS
from .bounds import MODES
from .measure import FRAMEWORK_MODES

NAMED = 2  # the highest points of each series named, with every point below 1 (a lower bound beaten)
NAME_CHARS = 28




def headroom_points(records: list[dict[str, Any]], keep_noisy: bool = False
                    ) -> dict[tuple[str, str, str], list[tuple[str, float, bool]]]:
    """(target, framework mode, SOL mode) → [(problem, median headroom, noisy)] over the problems measured
    (a noisy record only with `keep_noisy`: its headroom is the machine's as much as the program's)."""
    out: dict[tuple[str, str, str], list[tuple[str, float, bool]]] = {}
    for rec in records:
        noisy = bool(rec.get("noisy"))
        if noisy and not keep_noisy:
            continue
        for target, per_fw in rec.get("headroom", {}).items():
            for fw, per_mode in per_fw.items():
                for mode, r in per_mode.items():
                    out.setdefault((target, fw, mode), []).append((rec["problem"], r["median"], noisy))
    return out


def empty_reason(records: list[dict[str, Any]], keep_noisy: bool) -> str:
    """Why a batch has no headroom to plot."""
    noisy = sum(1 for r in records if r.get("noisy"))
    if noisy and not keep_noisy:
        return (f"no problem has a measured headroom to plot ({noisy} noisy record(s) left out: measured on a busy "
                "machine; --keep-noisy plots them, marked)")
    return f"no problem has a measured headroom to plot ({len(records)} record(s), none measured against a bound)"


def plot_headroom(records: list[dict[str, Any]], path: str, keep_noisy: bool = False) -> str | None:
    """Draws the plot to `path`; returns None, or (the plot empty) the reason its place shows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    series = headroom_points(records, keep_noisy)
    fw_order = {m: i for i, m in enumerate(FRAMEWORK_MODES)}
    panels = sorted({(t, fw) for t, fw, _ in series}, key=lambda p: (p[0], fw_order.get(p[1], 9), p[1]))
    if not panels:
        reason = empty_reason(records, keep_noisy)
        fig, ax = plt.subplots(figsize=(6.5, 4.5))
        ax.axis("off")
        ax.text(0.5, 0.5, "No headroom plot:\n" + reason.replace(" (", "\n(", 1), ha="center", va="center",
                wrap=True, fontsize=10)
        _save(fig, path)
        return reason
    noisy_total = sum(1 for r in records if r.get("noisy"))
    floors = sorted({str(r["precision_floor"]) for r in records if r.get("precision_floor")})
    floor = f"\nSOL under precision floor {', '.join(floors)}" if floors else ""  # the bounds are not as written
    fig, axes = plt.subplots(1, len(panels), figsize=(7.5 * len(panels), 5), squeeze=False)
    for ax, (target, fw) in zip(axes[0], panels, strict=True):
        named: dict[str, tuple[int, float, bool, str]] = {}  # problem -> its highest named point, once a panel
        for mode in MODES:
            items = sorted(series.get((target, fw, mode), []), key=lambda item: item[1])
            if not items:
                continue
            xs = list(range(1, len(items) + 1))
            ys = [h for _, h, _ in items]
            label = f"{LABELS[mode]} (median {ratio(statistics.median(ys))})"
            line, = ax.plot(xs, ys, marker=".", label=label)
            hollow = [(x, h) for x, (_, h, noisy) in zip(xs, items, strict=True) if noisy]
            if hollow:  # the noisy points kept: hollow rings over the line's dots
                ax.scatter([x for x, _ in hollow], [h for _, h in hollow], s=60, facecolors="none",
                           edgecolors=line.get_color(), linewidths=1.2, zorder=3)
            _outliers(named, xs, items, line.get_color())
        for problem, (x, h, noisy, colour) in named.items():
            name = problem.rsplit("/", 1)[-1]
            name = (name if len(name) <= NAME_CHARS else name[:NAME_CHARS - 1] + "…") + (" (noisy)" if noisy else "")
            left = x <= (len(xs) + 1) / 2  # a label grows into the plot, never past its edge
            ax.annotate(name, (x, h), xytext=(6 if left else -6, 6), textcoords="offset points", fontsize=7,
                        ha="left" if left else "right", color=colour, gid="outlier-label")
        ax.axhline(1.0, color="black", linewidth=1, linestyle="--")
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        format_axis(ax.yaxis, ratio)
        ax.set_xlabel("problems, sorted by headroom (the highest and those under 1× named)")
        ax.set_ylabel("measured ÷ SOL")
        kept = sum(1 for r in records if r.get("noisy") and keep_noisy)
        note = (f" ({kept} noisy kept, hollow rings)" if kept else
                f" ({noisy_total} noisy left out)" if noisy_total else "")
        ax.set_title(f"{fw} on {target}{note}{floor}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    _save(fig, path)
    return None


def _outliers(named: dict[str, tuple[int, float, bool, str]], xs: list[int], items: list[tuple[str, float, bool]],
              colour: str) -> None:
    """Adds a series' `NAMED` highest points and every point under 1× to `named`, each problem at its highest."""
    picked = {len(items) - 1 - k for k in range(min(NAMED, len(items)))}
    picked |= {k for k, (_, h, _) in enumerate(items) if h < 1}
    for k in picked:
        problem, h, noisy = items[k]
        if problem not in named or h > named[problem][1]:
            named[problem] = (xs[k], h, noisy, colour)


def _save(fig: Any, path: str) -> None:
    import matplotlib.pyplot as plt

    try:
        save_figure(fig, path, "the headroom plot", dpi=120)
    finally:
        plt.close(fig)
