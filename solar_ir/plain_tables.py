"""rich's text for a plain table, written directly: the same characters rich prints, at a fraction of the cost.

A network's report has tables of hundreds of rows, and rich lays out every cell as a renderable (measure,
wrap, pad, crop, segment): a ResNet-101's units took a fifth of `solar-opt --sol`. The tables SOLAR prints
are plain: string cells on one line, left or right justified, the default heavy-head box, no styles that
print and a console wide enough that nothing wraps. For those, `plain_table_text` writes what rich would; any
table outside that case (markup, emoji codes, several lines in a cell, a title wider than the table, a table
wider than the console ...) gets None, and the caller prints it with rich. tests/unit/test_plain_tables.py
compares the two on random tables.
"""

from __future__ import annotations

import re

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table

# What rich would read as markup (`[bold]`, `\[`) or as an emoji code (`:smile:`): left to rich.
_RICH_SYNTAX = re.compile(r"\[|\\|:\S*?:")


def _plain(text: object) -> bool:
    """A cell rich prints as it is: a one-line string with no markup, emoji code or control character, and
    no space at either end (rich strips those in some justifications)."""
    return (isinstance(text, str) and text == text.strip() and text.isprintable()
            and _RICH_SYNTAX.search(text) is None)


def plain_table_text(table: Table, console: Console) -> str | None:
    """What `console.print(table)` writes, or None when the table is not one this module writes alike."""
    options = console.options
    if (table.box is not box.HEAVY_HEAD or options.ascii_only or options.legacy_windows
            or table.caption or table.show_footer or table.show_lines or table.leading or not table.show_header
            or not table.show_edge or not table.pad_edge or table.collapse_padding or table.expand
            or table.width is not None or table.min_width is not None or table.padding != (0, 1, 0, 1)
            or table.row_styles or console.color_system is not None or not table.columns):
        return None
    columns = table.columns
    cells: list[list[str]] = []
    for col in columns:
        if (col.justify not in ("left", "right") or col.width is not None or col.min_width is not None
                or col.max_width is not None or col.ratio is not None or col.no_wrap):
            return None
        column = [col.header, *col._cells]
        if not all(_plain(c) for c in column):
            return None
        cells.append(column)
    widths = [max(cell_len(c) for c in column) for column in cells]
    width = sum(widths) + 3 * len(widths) + 1  # one space either side of each cell, and the bars
    if width > options.max_width:
        return None
    lines: list[str] = []
    title = table.title
    if title:
        if not _plain(title) or cell_len(title) > width or table.title_justify != "left":
            return None
        lines.append(title + " " * (width - cell_len(title)))
    justify = [c.justify for c in columns]
    lines.append("┏" + "┳".join("━" * (w + 2) for w in widths) + "┓")
    lines.append(_row([column[0] for column in cells], widths, justify, "┃"))
    lines.append("┡" + "╇".join("━" * (w + 2) for w in widths) + "┩")
    lines += [_row([column[r] for column in cells], widths, justify, "│") for r in range(1, len(cells[0]))]
    lines.append("└" + "┴".join("─" * (w + 2) for w in widths) + "┘")
    return "\n".join(lines) + "\n"


def _row(texts: list[str], widths: list[int], justify: list[str], bar: str) -> str:
    padded = [" " * (w - cell_len(t)) + t if j == "right" else t + " " * (w - cell_len(t))
              for t, w, j in zip(texts, widths, justify, strict=True)]
    return bar + " " + f" {bar} ".join(padded) + " " + bar


def print_table(console: Console, item: object) -> None:
    """`console.print(item)`, writing a plain table directly (see the module's docstring)."""
    text = plain_table_text(item, console) if isinstance(item, Table) else None
    if text is None:
        console.print(item)
    else:
        console.file.write(text)
