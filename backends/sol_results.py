"""The one model of a --sol run's results (DESIGN.md: "one model of the results and many views of it"). The
pricing step (`passes/sol.py`, `solar.analyze`, `solar-bench --report`) builds it once; the terminal tables,
the JSON document, the HTML page, the notebook view and the roofline PNG are views of it, and `Analysis`
(api/results.py) wraps it."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from solar.backends.cost import CostModel
from solar.backends.report import TargetReport, plot, render_report, to_json
from solar.backends.sol_verdict import facts, fusion_pairs, sentences
from solar.backends.source_lines import SourceLines, add_to_json, by_source_line, render_source_lines
from solar.ir.ops import ModuleOp

if TYPE_CHECKING:
    from solar.ir.pass_manager import PassContext


class WrittenOrder:
    """What --reorder-einsum leaves for --sol (`passes/reorder_einsum.py`'s result): the module as written,
    priced beside the reordered one."""

    original: ModuleOp


class CacheAwareSearch(ABC):
    """What --tile-search leaves for --sol (`passes/tile_search.py`'s result): the on-chip buffer it was given
    and the cache-aware mode it adds to each target's report."""

    buffer: str

    @abstractmethod
    def add_cache_aware(self, ctx: PassContext, report: TargetReport, model: CostModel) -> str | None:
        """Adds the cache-aware mode to `report`; why it cannot, or None."""


@dataclass
class SolResults:
    """Everything a --sol run found: each target's report, the source lines, and the document every view
    renders (`document`: the `--sol-report` JSON, with the verdict's figures)."""

    name: str
    reports: list[TargetReport]
    program: ModuleOp  # the priced program (calls inlined, dead code dropped): its fusion graph, its sweeps
    fp32_precision: str
    lines: list[SourceLines]
    document: dict[str, Any]

    @classmethod
    def build(cls, model: CostModel, reports: list[TargetReport], name: str, fp32_precision: str,
              base_dir: str | None = None, precision_floor: str | None = None) -> SolResults:
        """The model of `reports` (priced from `model`, their peaks under `precision_floor`); `base_dir` is where
        relative source paths are read."""
        lines = [by_source_line(r, base_dir) for r in reports]
        doc = add_to_json(to_json(reports, name, dict(model.values), fp32_precision, precision_floor), reports,
                          base_dir, lines)
        pairs = fusion_pairs(model)
        for entry, r in zip(doc["targets"], reports, strict=True):
            entry["verdict"] = facts(model, r, pairs, entry["units"], fp32_precision)
        doc["verdict"] = sentences(doc)
        return cls(name, reports, model.module, fp32_precision, lines, doc)

    # ---- views ------------------------------------------------------------------------------------------
    def verdict(self, measured: dict[str, Any] | None = None) -> list[str]:
        """What bounds the program on each target and where to act first (backends/sol_verdict.py)."""
        return sentences(self.document, measured) if measured else list(self.document["verdict"])

    def json(self, measured: dict[str, Any] | None = None, sweeps: list[dict[str, Any]] | None = None
             ) -> dict[str, Any]:
        """The `--sol-report` document (a copy), with a measurement and sweeps when there are any."""
        doc = json.loads(json.dumps(self.document))
        if measured is not None:
            doc["measured"] = measured
            doc["verdict"] = self.verdict(measured)
        if sweeps:
            doc["sweeps"] = sweeps
        return doc

    def terminal(self, measured: dict[str, Any] | None = None) -> str:
        """The terminal report: the verdict first, then the tables and the costliest source lines."""
        text = "Verdict:\n" + "".join(f"  {s}\n" for s in self.verdict(measured)) + "\n"
        text += f"Precision policy: {self.document['precision_policy']}.\n\n"
        text += render_report(self.reports, self.name)
        if self.lines and self.lines[0].located:
            text += render_source_lines(self.lines)
        return text

    def html(self, inputs: dict[str, Any], measured: dict[str, Any] | None = None,
             curves: list[dict[str, Any]] | None = None, fragment: bool = False) -> str:
        """The HTML page, or (`fragment`) its one root element for a notebook (backends/html_report.py;
        imported here, as it is only needed for --report)."""
        from solar.backends.html_report import dot_of, render_html, sir_of_units

        return render_html(self.json(measured), sir_of_units(self.reports[0]), dot_of(self.program), inputs,
                           measured, curves, fragment)

    def plot(self, path: str, measured: dict[str, Any] | None = None) -> None:
        """The roofline PNG, one panel per target (with the measured points after a measurement)."""
        plot(self.reports, path, measured)
