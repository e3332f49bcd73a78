"""solar-llm's PNG plot (`--plot FILE.png`, docs/llm.md): a row per phase asked (prefill's TTFT, decode's TPOT)
with the bound and the tokens/s side by side, against batch (against the length when one batch is asked).
Every prompt and context asked is a curve of its own (a colour per target, a dash per length); points that
do not fit in the target's memory are crossed, and decode's crossovers to compute-bound are dotted lines.
Every label is the one formatter's (backends/report.py): times in s/ms/µs/ns, no scientific notation."""

from __future__ import annotations

from typing import Any

from solar.backends.report import format_axis, quantity, seconds
from solar.ir.outputs import save_figure

from .llm_report import MODES, LlmAnalysis
from .llm_serving import ServingPoint

_DASHES = ("-", "--", "-.", ":")
_MARKERS = (".", "s", "^", "v", "D")


def _length(p: ServingPoint) -> int:
    return (p.prompt if p.phase == "prefill" else p.context) or 0


# Longer than most: one figure, its rows and panels drawn in order on shared axes and legends.
def plot_llm(analysis: LlmAnalysis, path: str, mode: str = "fused") -> None:
    """The plot (module docstring), in `mode` (the fused SOL by default)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    req = analysis.request
    phases = [ph for ph in req.phases if any(p.phase == ph for p in analysis.points)]
    fig, axes = plt.subplots(len(phases), 2, figsize=(12, 4.6 * len(phases)), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    by_batch = len(req.batches) > 1
    crossed = False  # whether any crossover line was drawn (the footnote explains them)
    for row, phase in zip(axes, phases, strict=True):
        lat, thr = row
        lengths = req.prompts if phase == "prefill" else req.contexts
        what = "prompt" if phase == "prefill" else "context"
        unfit_labelled = False
        for t, target in enumerate(req.targets):
            colour = colours[t % len(colours)]
            pts = [p for p in analysis.points if p.phase == phase and p.target == target.name and p.mode == mode]
            curves = ([(f"{target.name}, {what} {n}", k, [p for p in pts if _length(p) == n])
                       for k, n in enumerate(lengths)] if by_batch else
                      [(f"{target.name}, batch {req.batches[0]}", 0, pts)])
            for label, k, curve in curves:
                curve = sorted(curve, key=lambda p: p.batch if by_batch else _length(p))
                xs = [p.batch if by_batch else _length(p) for p in curve]
                style = {"color": colour, "linestyle": _DASHES[k % len(_DASHES)],
                         "marker": _MARKERS[k % len(_MARKERS)], "markersize": 4}
                lat.plot(xs, [p.time_s for p in curve], label=label, **style)
                thr.plot(xs, [p.tokens_per_s for p in curve], label=label, **style)
                unfit = [(x, p) for x, p in zip(xs, curve, strict=True) if not p.fits]
                if unfit:
                    mark = {"marker": "x", "color": "#b00020", "s": 60, "zorder": 4,
                            "label": None if unfit_labelled else "does not fit in memory"}
                    lat.scatter([x for x, _ in unfit], [p.time_s for _, p in unfit], **mark)
                    thr.scatter([x for x, _ in unfit], [p.tokens_per_s for _, p in unfit], **{**mark, "label": None})
                    unfit_labelled = True
            if phase == "decode" and by_batch:
                for n in lengths:
                    b = analysis.crossovers.get((target.name, mode, n))
                    if b:
                        crossed = True
                        for ax in (lat, thr):
                            ax.axvline(b, color=colour, linestyle=":", linewidth=1)
        label = "TTFT" if phase == "prefill" else "TPOT"
        lat.set_title(f"{phase}: {label} bound ({MODES[mode]})")
        thr.set_title(f"{phase}: tokens/s bound ({MODES[mode]})")
        for ax in (lat, thr):
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("batch" if by_batch else what)
            format_axis(ax.xaxis, quantity)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        format_axis(lat.yaxis, seconds)
        format_axis(thr.yaxis, lambda v: quantity(v, "tokens/s"))
        lat.set_ylabel(f"{label} (SOL)")
        thr.set_ylabel("tokens/s")
    if crossed:
        fig.text(0.5, 0.005, "dotted: the batch from which decode is compute-bound (per target and context)",
                 ha="center", fontsize=7)
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    try:
        save_figure(fig, path, "the solar-llm plot", dpi=120)
    finally:
        plt.close(fig)


def texts_of(fig: Any) -> list[str]:
    """Every text a figure shows (tests read the labels)."""
    import matplotlib.text

    return [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]
