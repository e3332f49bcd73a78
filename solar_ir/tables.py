"""Text tables for pass reports (rich, without colour), so that every pass prints its tables alike:
a left-justified title, text columns on the left, numbers on the right, and notes below the table."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from io import StringIO

from rich.console import Console
from rich.table import Table

from .plain_tables import print_table


def new_table(title: str, columns: Sequence[str], text_columns: int = 1) -> Table:
    """A table with `columns`; the first `text_columns` are left-justified, the rest (numbers) right."""
    table = Table(title=title, title_justify="left")
    for k, col in enumerate(columns):
        table.add_column(col, justify="left" if k < text_columns else "right")
    return table


def render_tables(tables: Iterable[Table | str], width: int = 160) -> str:
    """Tables and lines of text, in order, as the text a pass hands to `ctx.report`."""
    buf = StringIO()
    console = Console(file=buf, width=width, color_system=None)
    for item in tables:
        print_table(console, item)
    return buf.getvalue()
