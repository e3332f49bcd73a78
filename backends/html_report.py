"""The HTML report: one self-contained file (styles, scripts and charts inline; nothing fetched when it is
opened) rendered from the `--sol-report` document, the one model of the results (docs/html-report.md).

Every figure the page shows comes from that document; each totals cell carries the exact number in
`data-value`, so a browser test can compare the page with the JSON. Tables sort when a header is clicked.
"""

from __future__ import annotations

import html
import json
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

from solar.backends.html_svg import curves_svg, roofline_svg
from solar.backends.report import TargetReport, quantity, seconds, short_path, strict_json
from solar.backends.report import ratio as ratio_text
from solar.ir.ops import ModuleOp
from solar.ir.outputs import write_text_atomic
from solar.ir.printer import print_op

_LABELS = {"unfused": "unfused (Σ kernels)", "fused": "fused (Σ groups)", "whole_graph": "whole graph",
           "cache_aware": "cache-aware (Σ groups)"}

# Every rule is scoped under the report's one root element, so that the notebook view (`_repr_html_`, a
# fragment inside Jupyter's page) styles nothing of its host. Wide tables scroll inside their own box and
# numbers never wrap between figure and unit: the page fits 1,000 px without scrolling sideways.
_CSS = """
.solar-report{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#1d2430;
max-width:1400px}
.solar-report h1{font-size:22px}
.solar-report h2{font-size:18px;margin-top:28px;border-bottom:1px solid #dde;padding-bottom:4px}
.solar-report table{border-collapse:collapse;margin:8px 0 16px;font-size:13px;display:block;max-width:100%;
overflow-x:auto}
.solar-report th,.solar-report td{border:1px solid #d6dbe4;padding:3px 8px;text-align:right;vertical-align:top;
white-space:nowrap}
.solar-report th{background:#eef2f8;cursor:pointer;user-select:none}
.solar-report th.sorted-asc::after{content:" ▲"}.solar-report th.sorted-desc::after{content:" ▼"}
.solar-report td.text,.solar-report th.text{text-align:left}
.solar-report td.text{white-space:normal;min-width:6em}
.solar-report code,.solar-report pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
.solar-report pre{background:#f6f8fa;padding:8px;overflow-x:auto;max-height:360px}
.solar-report details{margin:4px 0}.solar-report summary{cursor:pointer}
.solar-report .note{color:#566;font-size:12px}
.solar-report .violation{color:#b00020;font-weight:600}
.solar-report .verdict{background:#f4f7fb;border-left:4px solid #3b6db3;padding:4px 14px;margin:8px 0 16px}
.solar-report .verdict p{margin:6px 0}
.solar-report .graph{max-height:600px;overflow:auto}.solar-report .graph svg{max-width:100%;height:auto}
.solar-report svg{max-width:100%;height:auto}
"""

# Sorting: a click on a header orders the rows by that column (numbers by data-value, else by text); a
# second click reverses. Plain DOM, no library.
_JS = """
document.querySelectorAll('table.sortable').forEach(function(table){
  table.querySelectorAll('th').forEach(function(th, col){
    th.addEventListener('click', function(){
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var asc = !th.classList.contains('sorted-asc');
      table.querySelectorAll('th').forEach(function(h){h.classList.remove('sorted-asc','sorted-desc');});
      th.classList.add(asc ? 'sorted-asc' : 'sorted-desc');
      function key(row){var c = row.cells[col]; var v = c.getAttribute('data-value');
        return v !== null && v !== '' && !isNaN(Number(v)) ? Number(v) : c.textContent.trim();}
      rows.sort(function(a, b){var x = key(a), y = key(b);
        var r = (typeof x === 'number' && typeof y === 'number') ? x - y : String(x).localeCompare(String(y));
        return asc ? r : -r;});
      rows.forEach(function(r){body.appendChild(r);});
    });
  });
});
"""


def _cell(text: str, value: Any = None, cls: str = "") -> str:
    attrs = f' data-value="{html.escape(repr(value) if isinstance(value, float) else str(value))}"' \
        if value is not None else ""
    attrs += f' class="{cls}"' if cls else ""
    return f"<td{attrs}>{html.escape(text)}</td>"


def _table(table_id: str, headers: list[str], rows: list[str], text_cols: set[int]) -> str:
    head = "".join(f'<th class="text">{html.escape(h)}</th>' if k in text_cols else f"<th>{html.escape(h)}</th>"
                   for k, h in enumerate(headers))
    body = "".join(f"<tr>{r}</tr>" for r in rows)
    return f'<table id="{table_id}" class="sortable"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _totals(doc: dict[str, Any]) -> str:
    rows = []
    for t in doc["targets"]:
        modes = dict(t["modes"])
        if t.get("cache_aware"):
            modes["cache_aware"] = t["cache_aware"]
        for m, res in modes.items():
            cells = [_cell(t["name"], cls="text"), _cell(_LABELS.get(m, m), cls="text"),
                     _cell(quantity(res["flops"]), res["flops"]), _cell(quantity(res["bytes"]), res["bytes"])]
            sol = f'<td id="total-{html.escape(t["name"])}-{m}" data-value="{res["time_s"]!r}">' \
                  f'{html.escape(seconds(res["time_s"]))}</td>'
            rows.append("".join(cells) + sol + _cell(res["bound"], cls="text"))
    return _table("totals", ["target", "mode", "FLOPs", "bytes", "SOL", "bound"], rows, {0, 1, 5}) + \
        "".join(f'<p class="note">{html.escape(t["name"])}: fusion gain (unfused ÷ fused) '
                f'<span id="gain-{html.escape(t["name"])}" data-value="{t["fusion_gain"]!r}">'
                f'{t["fusion_gain"]:.2f}×</span></p>' for t in doc["targets"])


def _works(table_id: str, target: dict[str, Any], key: str) -> str:
    rows = []
    for w in target[key]:
        tensor = sum(w["flops_tensor"].values())
        vector = sum(w["flops_vector"].values())
        where = w.get("loc")
        place = f'{short_path(where["file"])}:{where["line"]}' if where else ", ".join(w.get("lines", []))
        ai = w["intensity"]
        rows.append("".join([
            _cell((w.get("module") or w["name"]) + (f" ×{w['trips']}" if w["trips"] > 1 else ""), cls="text"),
            _cell(w["kind"], cls="text"), _cell(quantity(tensor), tensor), _cell(quantity(vector), vector),
            _cell(quantity(w["bytes"]), w["bytes"]), _cell("∞" if ai is None else quantity(ai), ai if ai is not None
                                                           else float("inf")),
            _cell(seconds(w["time_s"]), w["time_s"]), _cell(w["bound"], cls="text"), _cell(place, cls="text")]))
    return _table(table_id, ["name", "kind", "contraction FLOPs", "other FLOPs", "bytes", "FLOP/B", "SOL", "bound",
                             "source"], rows, {0, 1, 7, 8})


def _lines(target: dict[str, Any]) -> str:
    """The by-source-line table; the measured columns only where a measurement filled them."""
    lines = target.get("source_lines", [])
    measured = any(ln.get("measured_share") is not None or ln.get("headroom") is not None for ln in lines)
    rows = []
    for ln in lines:
        where = f'{short_path(ln["file"])}:{ln["line"]}' if ln["file"] else "<no source line>"
        code = ln["code"] + (f'  ← {", ".join(ln["library_frames"])}' if ln["library_frames"] else "")
        cells = [_cell(where, cls="text"), _cell(quantity(ln["flops"]), ln["flops"]),
                 _cell(quantity(ln["bytes"]), ln["bytes"]), _cell(seconds(ln["unfused_s"]), ln["unfused_s"]),
                 _cell(f'{100 * ln["unfused_share"]:.1f}%', ln["unfused_share"]),
                 _cell(seconds(ln["fused_s"]), ln["fused_s"]),
                 _cell(f'{100 * ln["fused_share"]:.1f}%', ln["fused_share"])]
        if measured:
            cells += [_cell("" if ln.get("measured_share") is None else f'{100 * ln["measured_share"]:.1f}%',
                            ln.get("measured_share")),
                      _cell("" if ln.get("headroom") is None else ratio_text(ln["headroom"]), ln.get("headroom"))]
        rows.append("".join([*cells, _cell(", ".join(ln["groups"]), cls="text"), _cell(code, cls="text")]))
    headers = ["line", "FLOPs", "bytes", "unfused", "share of unfused", "fused", "share of fused",
               *(["measured share", "headroom"] if measured else []), "groups", "source"]
    return _table(f'lines-{target["name"]}', headers, rows, {0, len(headers) - 2, len(headers) - 1})


def _per_unit(target: dict[str, Any], sir: dict[str, str]) -> str:
    parts = []
    for w in target["units"]:
        why = (f'{w["bound"]}-bound: tensor {seconds(w["tensor_s"])}, vector {seconds(w["vector_s"])}, memory '
               f'{seconds(w["memory_s"])} ({quantity(w["bytes"], "B")} at '
               f'{quantity(target["dram_bandwidth"], "B/s")}); '
               f'the SOL is the largest of the three')
        counts = (f'counts: {_dtype_counts(w["flops_tensor"])} contraction FLOPs (tensor-core eligible), '
                  f'{_dtype_counts(w["flops_vector"])} other FLOPs, {w["bytes"]} bytes'
                  + (f' (over {w["trips"]} runs)' if w["trips"] > 1 else ""))
        peaks = "; ".join(f'{p["work"]} {p["dtype"]}: {p["precision"]} {p["unit"]} '
                          f'{quantity(p["flop_per_s"], "FLOP/s")} '
                          f'({p["reason"]})' for p in w["peaks"])
        parts.append(f'<details><summary><code>{html.escape(w["name"])}</code> — {html.escape(seconds(w["time_s"]))}'
                     f' ({html.escape(w["bound"])})</summary><p>{html.escape(counts)}</p><p>{html.escape(why)}</p>'
                     f'<p class="note">{html.escape(peaks)}</p>'
                     f'<pre>{html.escape(sir.get(w["name"], ""))}</pre></details>')
    return "".join(parts)


def _dtype_counts(by_dtype: dict[str, int]) -> str:
    return " + ".join(f"{n} {d}" for d, n in by_dtype.items() if n) or "0"


def _measured(measured: dict[str, Any] | None) -> str:
    """A solar-bench record: each framework mode's times, its headroom over every SOL mode, the violations."""
    if not measured:
        return ""
    times = []
    for mode, m in measured.get("measurements", {}).items():
        median = seconds(m["median_s"]) if m.get("median_s") else m.get("skipped") or m.get("error") or ""
        least = seconds(m["min_s"]) if m.get("min_s") else ""
        times.append(_cell(mode, cls="text") + _cell(m.get("device") or "", cls="text")
                     + _cell(median, m.get("median_s")) + _cell(least, m.get("min_s"))
                     + _cell(str(m.get("runs", 0)), m.get("runs")))
    rows = []
    for target, per_framework in measured.get("headroom", {}).items():
        for framework, per_mode in per_framework.items():
            for mode, pair in per_mode.items():
                rows.append(_cell(target, cls="text") + _cell(framework, cls="text") + _cell(mode, cls="text")
                            + _cell(ratio_text(pair["median"]), pair["median"])
                            + _cell(ratio_text(pair["min"]), pair["min"]))
    conditions = measured.get("conditions") or {}
    noisy = (f'<p class="violation" id="noisy">noisy: measured on a busy machine '
             f'({html.escape("; ".join(conditions.get("reasons", [])))}): the times and headroom are not '
             "trustworthy</p>") if measured.get("noisy") else ""
    out = "<h2>Measured</h2>" + noisy + _table("measured", ["framework mode", "device", "median", "min", "runs"], times,
                                       {0, 1})
    if rows:
        out += "<h3>Headroom (measured ÷ SOL)</h3>" + _table(
            "headroom", ["target", "framework mode", "SOL mode", "median", "min"], rows, {0, 1, 2})
    violations = "".join(
        f'<p class="violation">violation: {html.escape(v["framework_mode"])} ran in '
        f'{html.escape(seconds(v["measured_s"]))}, below the {html.escape(v["mode"])} SOL '
        f'{html.escape(seconds(v["bound_s"]))} on {html.escape(v["target"])}: {html.escape(v["why"])}</p>'
        for v in measured.get("violations", []))
    out += violations or '<p class="note">no violations: no run was faster than a bound.</p>'
    lines = [ln for ln in measured.get("source_lines", []) if ln.get("measured_s") is not None]
    if lines:
        out += "<h3>Measured by source line</h3>" + _table("measured-lines", [
            "line", "measured", "share", "SOL (unfused)", "headroom", "source"], [
            _cell(f'{ln["file"]}:{ln["line"]}', cls="text") + _cell(seconds(ln["measured_s"]), ln["measured_s"])
            + _cell(f'{100 * (ln["measured_share"] or 0):.1f}%', ln["measured_share"])
            + _cell(seconds(ln["unfused_s"]), ln["unfused_s"])
            + _cell("" if ln.get("headroom") is None else ratio_text(ln["headroom"]), ln.get("headroom"))
            + _cell(ln["code"], cls="text") for ln in lines], {0, 5})
    out += "".join(f'<p class="note">{html.escape(v["framework_mode"])} beats the {html.escape(v["mode"])} model on '
                   f'{html.escape(v["target"])}: {html.escape(v["why"])}</p>' for v in measured.get("beats", []))
    return out


@dataclass(frozen=True)
class FusionGraph:
    """The fusion graph as Graphviz drew it (`svg`), or why it was not drawn (`why_not`: the page lists the
    groups instead and says why)."""

    svg: str | None
    why_not: str = ""


NO_DOT = FusionGraph(None, "Graphviz `dot` was not found")


def render_html(doc: dict[str, Any], sir: dict[str, str] | None = None, graph: FusionGraph = NO_DOT,
                inputs: dict[str, Any] | None = None, measured: dict[str, Any] | None = None,
                sweep: list[dict[str, Any]] | None = None, fragment: bool = False) -> str:
    """The page. `sir`: each unit's SIR by name; `graph`: the fusion graph (not drawn: a list of groups);
    `measured`: a solar-bench record (headroom, violations); `sweep`: curves, each {"name", "x", "series"}."""
    doc = strict_json(doc)
    name = html.escape(doc["module"])
    # A fragment (the notebook view) is the root element alone, its styles inside it.
    head = "" if fragment else (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
        f'content="width=device-width"><title>SOLAR: @{name}</title><style>body{{margin:0;background:#fff}}{_CSS}'
        f'</style></head><body>')
    inner = f"<style>{_CSS}</style>" if fragment else ""
    out = [f'{head}<div class="solar-report">{inner}<h1>Speed of light of @{name}</h1>']
    out.append(_verdict(doc.get("verdict") or []))
    out.append("<h2>Totals</h2>" + _totals(doc))
    out.append(_measured(measured))
    for t in doc["targets"]:
        tn = html.escape(t["name"])
        out.append(f'<h2>{tn} ({html.escape(t["full_name"])})</h2>')
        out.append(f'<div class="roofline" id="roofline-{tn}">{roofline_svg(t, measured)}</div>')
        out.append("<h3>Units of execution</h3>" + _works(f"units-{tn}", t, "units"))
        if t["groups"]:
            out.append("<h3>Fusion groups</h3>" + _works(f"groups-{tn}", t, "groups"))
        if any(ln["file"] for ln in t.get("source_lines", [])):  # hand-written SIR has no source lines
            out.append("<h3>By source line</h3>" + _lines(t) +
                       '<p class="note">fused time of a line: its part of each fusion group\'s time, split in '
                       "proportion to the unfused times of the group's lines.</p>")
    out.append("<h2>Fusion-group graph</h2>")
    if graph.svg:  # collapsed, and capped in height when open: a network's graph is thousands of pixels tall
        out.append(f'<details id="fusion-graph"><summary>the einsum graph, fusion groups boxed</summary>'
                   f'<div class="graph">{graph.svg}</div></details>')
    else:
        items = "".join(f'<li><code>{html.escape(g["name"])}</code>: {html.escape(", ".join(g.get("lines", [])))}'
                        f"</li>" for g in doc["targets"][0]["groups"]) if doc["targets"] else ""
        out.append(f'<ul id="group-list">{items or "<li>no fusion groups (run --fuse)</li>"}</ul>'
                   '<p class="note">(' + html.escape(graph.why_not) + ': the groups as a list.)</p>')
    if doc["targets"]:
        out.append("<h2>Per unit: SIR, counts and the bound</h2>" + _per_unit(doc["targets"][0], sir or {}))
    if sweep:
        out.append("<h2>Sweep</h2>" + "".join(curves_svg(c) for c in sweep))
    facts = {"module": doc["module"], "params": doc.get("params", {}), "fp32_precision": doc.get("fp32_precision"),
             "precision policy": doc.get("precision_policy"),
             **(inputs or {})}
    out.append("<h2>Inputs</h2><table id=\"inputs\"><tbody>" + "".join(
        f'<tr><th class="text">{html.escape(k)}</th><td class="text">{html.escape(_fact(v))}</td></tr>'
        for k, v in facts.items()) + "</tbody></table>")
    out.append(f'<script type="application/json" id="solar-report">{_script_json(doc)}</script>')
    out.append(f"<script>{_JS}</script></div>" + ("" if fragment else "</body></html>\n"))
    return "".join(out)


def html_cell(text: str, value: Any = None, cls: str = "") -> str:
    """A table cell as the report writes it: the text shown, the exact number in `data-value`."""
    return _cell(text, value, cls)


def html_table(table_id: str, headers: list[str], rows: list[str], text_cols: set[int]) -> str:
    """A sortable table (`text_cols`: the columns of text, left-aligned)."""
    return _table(table_id, headers, rows, text_cols)


def standalone_page(title: str, body: str, doc: dict[str, Any]) -> str:
    """A whole page with the report's styles and sorting around `body`, `doc` embedded as JSON (solar-llm's
    report, bench/llm_html.py)."""
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
            f'content="width=device-width"><title>SOLAR: {html.escape(title)}</title><style>body{{margin:0;'
            f'background:#fff}}{_CSS}</style></head><body><div class="solar-report">{body}'
            f'<script type="application/json" id="solar-report">{_script_json(doc)}</script>'
            f"<script>{_JS}</script></div></body></html>\n")


def _verdict(sentences: list[str]) -> str:
    """The verdict first (backends/sol_verdict.py): each sentence a paragraph, `code` spans as code."""
    if not sentences:
        return ""
    paragraphs = "".join(
        "<p>" + "".join(f"<code>{html.escape(part)}</code>" if k % 2 else html.escape(part)
                        for k, part in enumerate(text.split("`"))) + "</p>" for text in sentences)
    return f'<section id="verdict" class="verdict"><h2>Verdict</h2>{paragraphs}</section>'


def _fact(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _script_json(doc: dict[str, Any]) -> str:
    # Inside <script>, `</script` ends the element and `<!--` followed by `<script` makes the parser skip the
    # real end tag: no `<` may appear at all. json.dumps writes `<` only inside strings, where \u003c is the
    # same character to JSON.parse.
    return json.dumps(doc, allow_nan=False).replace("<", "\\u003c")


def write_html(doc: dict[str, Any], path: str, sir: dict[str, str] | None = None, graph: FusionGraph = NO_DOT,
               inputs: dict[str, Any] | None = None, measured: dict[str, Any] | None = None,
               sweep: list[dict[str, Any]] | None = None) -> None:
    write_text_atomic(path, render_html(doc, sir, graph, inputs, measured, sweep), "the HTML report")


# ---- what the page shows beside the document ------------------------------------------------------


def sir_of_units(report: TargetReport) -> dict[str, str]:
    """Each unit's ops as SIR text, by the unit's name."""
    return {w.name: "\n".join(print_op(op) for op in w.ops) for w, _ in report.units}


# The most nodes (layout_size) a graph may bring to dot's layout: about 30 s of CPU. Past it dot runs for
# minutes (a DenseNet: over five), so the page lists the groups instead, decided by the graph alone and
# not by how busy the machine is.
DOT_LAYOUT_LIMIT = 30_000


def dot_of(module: ModuleOp) -> FusionGraph:
    """The einsum graph (`--emit=dot`) as SVG when Graphviz's `dot` is installed and the graph is small enough
    to lay out (DOT_LAYOUT_LIMIT); else why not."""
    exe = shutil.which("dot")
    if exe is None:
        return NO_DOT
    from solar.backends.einsum_graph import einsum_graph
    from solar.backends.export_dot import emit_dot, layout_size  # graphviz's Python package: only when drawing

    try:
        graph = einsum_graph(module)
        size = layout_size(graph)
        if size > DOT_LAYOUT_LIMIT:
            return FusionGraph(None, f"the graph is too large for Graphviz to lay out in reasonable time (layout "
                                     f"size {size:,}, over {DOT_LAYOUT_LIMIT:,})")
        text = emit_dot(module, graph)
        done = subprocess.run([exe, "-Tsvg"], input=text, capture_output=True, text=True, timeout=60, check=True)
    except subprocess.TimeoutExpired:
        return FusionGraph(None, "Graphviz `dot` did not finish within 60 s")
    except Exception as err:  # a graph dot cannot draw still gets the list
        return FusionGraph(None, f"Graphviz `dot` could not draw the graph ({type(err).__name__})")
    svg = done.stdout
    return FusionGraph(svg[svg.find("<svg"):]) if "<svg" in svg else FusionGraph(None, "Graphviz `dot` drew no SVG")


def module_params(module: ModuleOp) -> dict[str, int]:
    return {p.name: p.default for p in module.params if p.default is not None}


def report_inputs(file: str, params: dict[str, int], targets: list[str], command: str) -> dict[str, Any]:
    """The inputs section: the file, sizes, targets, SOLAR's version and the command line."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        solar_version = version("solar-sol")
    except PackageNotFoundError:
        solar_version = "unknown"
    return {"file": file, "sizes": params, "targets": targets, "solar_version": solar_version, "command": command}

