"""`Analysis.by_module()` as a person reads it: fvcore's table, one row per node of the module tree indented by
its depth, every figure in the one formatter (`129 GFLOP`, `1.94 ms`), never a raw float of seconds. The rows
stay a list of `ModuleCost` for code."""

from __future__ import annotations

import html
from typing import Any

from solar.backends.report import quantity, seconds

_COLUMNS = ("module", "FLOPs", "bytes", "unfused SOL", "fused SOL", "units")


class ModuleTable(list):  # type: ignore[type-arg]
    """A list of ModuleCost rows whose repr (the notebook's and the terminal's) is the table."""

    def cells(self) -> list[tuple[str, ...]]:
        return [(("  " * m.depth) + (m.path.rsplit(".", 1)[-1] if m.path else "(model)"), quantity(m.flops, "FLOP"),
                 quantity(m.bytes, "B"), seconds(m.unfused_s), seconds(m.fused_s), str(m.units)) for m in self]

    def __repr__(self) -> str:
        rows = [_COLUMNS, *self.cells()]
        widths = [max(len(r[c]) for r in rows) for c in range(len(_COLUMNS))]
        return "\n".join("  ".join(cell.ljust(w) if c == 0 else cell.rjust(w)
                                   for c, (cell, w) in enumerate(zip(r, widths, strict=True))).rstrip()
                         for r in rows)

    __str__ = __repr__

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in _COLUMNS)
        body = "".join("<tr>" + "".join(
            f'<td style="text-align:{"left" if c == 0 else "right"};white-space:pre">{html.escape(cell)}</td>'
            for c, cell in enumerate(row)) + "</tr>" for row in self.cells())
        return f'<table class="solar-modules"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def module_table(rows: list[Any]) -> ModuleTable:
    return ModuleTable(rows)
