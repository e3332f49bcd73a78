"""plain_tables writes what rich prints for the tables it accepts, and leaves the others to rich."""

from __future__ import annotations

from io import StringIO

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table

from solar.ir.plain_tables import plain_table_text, print_table

# Letters, digits, the report's symbols (µ × ← ∞ ·), wide characters and spaces; in one table of three,
# characters rich reads as markup or emoji codes too, so that both the written and the refused cases come up.
_PLAIN = "ab Z09.,-%/µ×←∞·中界é"
_SYNTAX = "[]:\\"


def _rich(table: Table, width: int) -> str:
    console = Console(file=StringIO(), width=width, color_system=None)
    console.print(table)
    return console.file.getvalue()


def _console(width: int) -> Console:
    return Console(file=StringIO(), width=width, color_system=None)


@st.composite
def _tables(draw: st.DrawFn) -> Table:
    text = st.text(alphabet=draw(st.sampled_from([_PLAIN, _PLAIN, _PLAIN + _SYNTAX])), max_size=12)
    title = draw(st.none() | text)
    table = Table(title=title, title_justify="left")
    n = draw(st.integers(1, 5))
    for _ in range(n):
        table.add_column(draw(text), justify=draw(st.sampled_from(["left", "right"])))
    for _ in range(draw(st.integers(0, 6))):
        table.add_row(*draw(st.lists(text, min_size=n, max_size=n)))
    return table


@settings(max_examples=400)
@given(_tables(), st.sampled_from([20, 60, 1000]))
def test_same_text_as_rich(table: Table, width: int) -> None:
    text = plain_table_text(table, _console(width))
    if text is not None:
        assert text == _rich(table, width)


def test_a_report_table_is_written_directly() -> None:
    table = Table(title="Totals", title_justify="left")
    table.add_column("mode")
    table.add_column("h100-sxm SOL", justify="right")
    table.add_row("unfused (Σ kernels)", "1.94 ms")
    table.add_row("fused (Σ groups)", "302 µs")
    expected = ("Totals                                \n"
                "┏━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━┓\n"
                "┃ mode                ┃ h100-sxm SOL ┃\n"
                "┡━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━┩\n"
                "│ unfused (Σ kernels) │      1.94 ms │\n"
                "│ fused (Σ groups)    │       302 µs │\n"
                "└─────────────────────┴──────────────┘\n")
    assert _rich(table, 1000) == expected
    console = _console(1000)
    assert plain_table_text(table, console) == expected
    print_table(console, table)
    assert console.file.getvalue() == expected


def test_tables_it_does_not_write_are_left_to_rich() -> None:
    markup = Table(title="t")
    markup.add_column("x")
    markup.add_row("[bold]a[/bold]")
    wide = Table()
    wide.add_column("x")
    wide.add_row("a" * 30)
    titled = Table(title="a title wider than its table")
    titled.add_column("x")
    centered = Table()
    centered.add_column("x", justify="center")
    for table, width in ((markup, 1000), (wide, 20), (titled, 1000), (centered, 1000)):
        console = _console(width)
        assert plain_table_text(table, console) is None
        print_table(console, table)
        assert console.file.getvalue() == _rich(table, width)
    assert _rich(markup, 1000).splitlines()[4] == "│ a │"  # rich read the markup
