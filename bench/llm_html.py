"""solar-llm's HTML report (`--report out.html`, docs/llm.md): one self-contained page with a summary per
target, the phase figures (prefill TTFT and decode TPOT at every point asked), the plots (every context and
prompt asked, points that do not fit marked) and a per-operator table per phase and target, as LLM-Viewer's
per-layer table shows it. Styles, sorting and charts are the SOL report's (backends/html_report.py).

The operator table prices each unit on its own (the unfused mode: every operator its own kernel) at the
first batch and length asked, for the whole model on one chip. Units are named by the module that made them
with the layer index replaced by `*`; a contraction that shares its module with other work (attention's
product inside `self_attn`) gets a row of its own. A row's `×` is how often the model runs it: the layer
count for a decoder layer's operator, exported from twins of 2 and 3 layers (bench/twins.py), each figure
the mean over the layers exported. The rows' totals add up to the unfused step time on one chip."""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from solar.backends.cost import CostModel, Peaks
from solar.backends.html_report import html_cell, html_table, standalone_page
from solar.backends.html_svg import curves_svg
from solar.backends.mode_results import roofline_bound
from solar.backends.report import analyse, quantity, seconds, short_path, strict_json, unit_module
from solar.ir.outputs import write_text_atomic
from solar.targets.loader import Target

from .llm_report import MODES, LlmAnalysis, analysis_json
from .llm_serving import ServingPoint, StepModel

_LAYER = re.compile(r"\blayers\.\d+\b")
_SUFFIX = re.compile(r"(_\d+)*(\.\d+)*$")
PLOT_MODE = "fused"


@dataclass
class OperatorRow:
    """One operator of the model: its figures for one run (the mean over the runs exported) and how often
    the model runs it."""

    name: str
    ops: list[str]
    count: int
    flops_tensor: float = 0.0
    flops_vector: float = 0.0
    bytes: float = 0.0
    tensor_s: float = 0.0
    vector_s: float = 0.0
    memory_s: float = 0.0
    seconds: float = 0.0  # one run: Σ over its units of each unit's roofline
    layers_seen: set[str] = field(default_factory=set)  # the layer indices it was exported in

    @property
    def bound(self) -> str:
        return roofline_bound(self.tensor_s, self.vector_s, self.memory_s, self.seconds)

    @property
    def total_s(self) -> float:
        return self.seconds * self.count

    def as_record(self) -> dict[str, Any]:
        return {"operator": self.name, "ops": self.ops, "count": self.count, "flops_tensor": self.flops_tensor,
                "flops_vector": self.flops_vector, "bytes": self.bytes, "time_s": self.seconds,
                "total_s": self.total_s, "bound": self.bound}


def priced_step(step: StepModel, length: int) -> StepModel:
    """The export that prices `length` (one exported below or above a guard of the model's, bench/llm_serving)."""
    while length < step.least_length and step.shorter is not None:
        step = step.shorter
    while step.most_length is not None and length > step.most_length and step.longer is not None:
        step = step.longer
    return step


def operator_rows(step: StepModel, layers: int, target: Target, batch: int, length: int) -> list[OperatorRow]:
    """The operators of one phase at one point on one target, costliest first (module docstring)."""
    step = priced_step(step, length)
    twins = step.twins_at(batch)
    twin_layers = min(twins)
    surface = twins[twin_layers]
    values: dict[str, int] = {}
    if step.export_at is None:
        values[step.sizes["batch"]] = batch
    if not step.pinned:
        values[step.sizes[step.length_name]] = length
    if "cache_slots" in step.sizes:  # a static cache holds the context and the new token
        values[step.sizes["cache_slots"]] = length + 1
    model = CostModel(surface.module, surface.fp32_precision, values=surface.point(values), check_accesses=False)
    report = analyse(model, Peaks(target, surface.precision_floor), None)
    rows: dict[str, OperatorRow] = {}
    # A unit the frontend gave no module (a concat, a gather) belongs to the module of the unit before it: the
    # rotary embedding's concat inside a layer's attention is run once per layer, as the attention is.
    modules: list[str | None] = []
    for w, _ in report.units:
        modules.append(unit_module(w) or (modules[-1] if modules else None))
    per_module = Counter(modules)
    for (w, t), module in zip(report.units, modules, strict=True):
        shown = _LAYER.sub("layers.*", module) if module else ""
        op = _SUFFIX.sub("", w.name.split()[0].lstrip("@%"))
        if not shown:
            key = f"({op})"
        elif w.flops_tensor and per_module[module] > 1:
            key = f"{shown} · {op}"  # a contraction among other work of its module: a row of its own
        else:
            key = shown
        row = rows.setdefault(key, OperatorRow(key, [], 1))
        if op not in row.ops:
            row.ops.append(op)
        match = _LAYER.search(module or "")
        row.layers_seen.add(match.group(0) if match else "")
        row.flops_tensor += sum(w.flops_tensor.values()) * w.trips
        row.flops_vector += sum(w.flops_vector.values()) * w.trips
        row.bytes += w.total_bytes
        row.tensor_s += t.tensor_s
        row.vector_s += t.vector_s
        row.memory_s += t.memory_s
        row.seconds += t.seconds
    out = []
    for row in rows.values():
        seen = len(row.layers_seen)
        # A decoder layer's operator: the mean over the layers exported, run once per layer of the model.
        if "" not in row.layers_seen and seen > 0:
            for name in ("flops_tensor", "flops_vector", "bytes", "tensor_s", "vector_s", "memory_s", "seconds"):
                setattr(row, name, getattr(row, name) / seen)
            row.count = layers if len(twins) > 1 or twin_layers != layers else seen
        out.append(row)
    return sorted(out, key=lambda r: -r.total_s)


# ---- the page ------------------------------------------------------------------------------------------


def render_llm_html(analysis: LlmAnalysis, command: str = "") -> str:
    """The page (module docstring)."""
    s = analysis.config.shape
    req = analysis.request
    title = f"Serving bounds of {short_path(analysis.config.path)}"
    head = (f"{s.model_type}, {s.layers} layers, hidden {s.hidden}, {s.heads} heads ({s.kv_heads} key-value), "
            f"{str(s.dtype).replace('torch.', '')}; KV cache {quantity(s.kv_bytes_per_token, 'B')} per token")
    out = [f"<h1>{html.escape(title)}</h1><p>{html.escape(head)}</p>", _summary(analysis)]
    operators: dict[str, dict[str, Any]] = {}
    for phase in req.phases:
        rows = [p for p in analysis.points if p.phase == phase]
        if not rows:
            continue
        out.append(f"<h2>{html.escape(phase)}</h2>" + _phase_table(phase, rows))
        out.append(f'<div class="plots" id="plots-{phase}">' + _plots(analysis, phase) + "</div>")
        step = analysis.steps.get(phase)
        if step is None:
            continue
        batch = req.batches[0]
        length = (req.prompts if phase == "prefill" else req.contexts)[0]
        for target in req.targets:
            op_rows = operator_rows(step, s.layers, target, batch, length)
            operators.setdefault(phase, {})[target.name] = {"batch": batch, "length": length,
                                                            "rows": [r.as_record() for r in op_rows]}
            out.append(_operator_table(phase, target.name, op_rows, batch, length))
    if analysis.crossovers:
        out.append("<h2>Decode turns compute-bound at batch</h2>" + html_table("crossovers", [
            "target", "mode", "context", "batch"], [
            html_cell(t, cls="text") + html_cell(MODES[m], cls="text") + html_cell(str(c), c)
            + html_cell(f"{b:,}" if b else "never (≤ 2^20)", b) for (t, m, c), b in analysis.crossovers.items()],
            {0, 1}))
    notes = [*(f"note: {n}" for n in analysis.notes), *(f"remark: {r}" for r in analysis.remarks),
             *(f"validation: {v}" for v in analysis.validations), *(f"warning: {w}" for w in analysis.warnings)]
    out.append("<h2>Notes</h2>" + "".join(f'<p class="note">{html.escape(n)}</p>' for n in notes))
    if command:
        out.append(f'<h2>Inputs</h2><table id="inputs"><tbody><tr><th class="text">command</th>'
                   f'<td class="text">{html.escape(command)}</td></tr></tbody></table>')
    doc = {**analysis_json(analysis), "operators": operators}
    return standalone_page(title, "".join(out), strict_json(doc))


def write_llm_html(analysis: LlmAnalysis, path: str, command: str = "") -> None:
    write_text_atomic(path, render_llm_html(analysis, command), "the solar-llm HTML report")


def _summary(analysis: LlmAnalysis) -> str:
    """Per target, the first point asked of each phase in the fused mode, and what does not fit."""
    req = analysis.request
    sentences = []
    for target in req.targets:
        for phase in req.phases:
            length = (req.prompts if phase == "prefill" else req.contexts)[0]
            p = next((p for p in analysis.points if p.phase == phase and p.target == target.name
                      and p.mode == PLOT_MODE and p.batch == req.batches[0] and _length(p) == length), None)
            if p is None:
                continue
            what = f"prompt {length}" if phase == "prefill" else f"context {length}"
            label = "TTFT" if phase == "prefill" else "TPOT"
            sentences.append(f"On {target.name}, {phase} at batch {p.batch} and {what}: {label} at least "
                             f"{seconds(p.time_s)}, {p.bound}-bound, {quantity(p.tokens_per_s)} tokens/s"
                             + ("" if p.fits else f"; it does not fit: {quantity(p.memory.total, 'B')} per chip "
                                                  f"against {quantity(target.dram_capacity, 'B')}") + ".")
        unfit = [p for p in analysis.points if p.target == target.name and not p.fits and p.mode == PLOT_MODE]
        if unfit:
            sentences.append(f"On {target.name}, {len(unfit)} of "
                             f"{sum(1 for p in analysis.points if p.target == target.name and p.mode == PLOT_MODE)} "
                             "points do not fit in memory (marked ✕ on the plots).")
    body = "".join(f"<p>{html.escape(t)}</p>" for t in sentences)
    return f'<section id="verdict" class="verdict"><h2>Summary</h2>{body}</section>'


def _length(p: ServingPoint) -> int:
    return (p.prompt if p.phase == "prefill" else p.context) or 0


def _phase_table(phase: str, rows: list[ServingPoint]) -> str:
    length = "prompt" if phase == "prefill" else "context"
    label = "TTFT bound" if phase == "prefill" else "TPOT bound"
    body = []
    for p in rows:
        body.append("".join([
            html_cell(p.target, cls="text"), html_cell(MODES[p.mode], cls="text"), html_cell(str(p.batch), p.batch),
            html_cell(str(_length(p)), _length(p)), html_cell(seconds(p.time_s), p.time_s),
            html_cell(quantity(p.tokens_per_s), p.tokens_per_s), html_cell(quantity(p.weight_bytes, "B"),
                                                                            p.weight_bytes),
            html_cell(quantity(p.kv_cache_bytes, "B"), p.kv_cache_bytes),
            html_cell(quantity(p.memory.total, "B"), p.memory.total),
            html_cell("yes" if p.fits else "no", cls="text" if p.fits else "text violation"),
            html_cell(p.bound, cls="text"),
            html_cell(seconds(p.request_latency_s) if p.request_latency_s is not None else "-", p.request_latency_s)]))
    return html_table(f"phase-{phase}", ["target", "mode", "batch", length, label, "tokens/s", "weights", "KV cache",
                                         "memory", "fits", "bound", "request"], body, {0, 1, 9, 10})


def _plots(analysis: LlmAnalysis, phase: str) -> str:
    """Per target, the fused bound against batch with a curve per length asked (against the length when one
    batch was asked); points that do not fit are marked."""
    req = analysis.request
    lengths = req.prompts if phase == "prefill" else req.contexts
    label = "TTFT" if phase == "prefill" else "TPOT"
    what = "prompt" if phase == "prefill" else "context"
    out = []
    for target in req.targets:
        pts = {(p.batch, _length(p)): p for p in analysis.points
               if p.phase == phase and p.target == target.name and p.mode == PLOT_MODE}
        if len(req.batches) > 1:
            x, xs, series_of = "batch", req.batches, [(f"{what} {n}", [(b, n) for b in req.batches]) for n in lengths]
        elif len(lengths) > 1:
            x, xs, series_of = what, lengths, [(f"batch {req.batches[0]}", [(req.batches[0], n) for n in lengths])]
        else:
            p = pts.get((req.batches[0], lengths[0]))
            out.append(f'<p class="note">{html.escape(target.name)}: one point asked, no curve: {label} '
                       f'{html.escape(seconds(p.time_s) if p else "-")}.</p>')
            continue
        series = {name: [pts[k].time_s if k in pts else 0.0 for k in keys] for name, keys in series_of}
        unfit = [(float(xs[i]), pts[k].time_s, name) for name, keys in series_of for i, k in enumerate(keys)
                 if k in pts and not pts[k].fits]
        out.append(curves_svg({"name": f"{target.name}: {label} bound ({MODES[PLOT_MODE]})", "x": x, "points": xs,
                               "series": series, "unfit": unfit}))
        if unfit:
            out.append(f'<p class="note">✕: does not fit in {html.escape(quantity(target.dram_capacity, "B"))} '
                       f"of {html.escape(target.name)} memory: "
                       + html.escape(", ".join(f"{name} at {x} {int(v):,}" for v, _, name in unfit)) + "</p>")
    return "".join(out)


def _operator_table(phase: str, target: str, rows: list[OperatorRow], batch: int, length: int) -> str:
    total = sum(r.total_s for r in rows)
    body = []
    for r in rows:
        ai = r.bytes and (r.flops_tensor + r.flops_vector) / r.bytes
        body.append("".join([
            html_cell(r.name, cls="text"), html_cell(", ".join(r.ops), cls="text"), html_cell(f"×{r.count}", r.count),
            html_cell(quantity(r.flops_tensor), r.flops_tensor), html_cell(quantity(r.flops_vector), r.flops_vector),
            html_cell(quantity(r.bytes, "B"), r.bytes), html_cell(quantity(ai) if r.bytes else "∞", ai or None),
            html_cell(seconds(r.seconds), r.seconds), html_cell(r.bound, cls="text"),
            html_cell(seconds(r.total_s), r.total_s),
            html_cell(f"{100 * r.total_s / total:.1f} %" if total else "", r.total_s / total if total else None)]))
    what = "prompt" if phase == "prefill" else "context"
    table_id = f"operators-{phase}-{target}"
    return (f"<h3>Per operator: {html.escape(target)}, batch {batch}, {what} {length}</h3>"
            + html_table(table_id, ["operator", "ops", "×", "contraction FLOPs", "other FLOPs", "bytes", "FLOP/B",
                                    "SOL each", "bound", "SOL all", "share"], body, {0, 1, 8})
            + f'<p class="note">each operator its own kernel (unfused), the whole model on one chip: Σ '
              f'<span id="{table_id}-total" data-value="{total!r}">{html.escape(seconds(total))}</span>; × is how '
              "often the model runs it (a decoder layer's operator: once per layer).</p>")


def operators_json(html_text: str) -> dict[str, Any]:
    """The document a page embeds (for tests and tools reading a report back)."""
    script = html_text.split('id="solar-report">', 1)[1].split("</script>", 1)[0]
    return json.loads(script)
