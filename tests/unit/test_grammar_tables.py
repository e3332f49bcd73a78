"""The grammar's LALR tables ship with the package (solar/grammar/sir.tables), so no run rebuilds them."""

from __future__ import annotations

import os
import subprocess
import sys

from solar.ir import grammar_tables
from solar.ir.printer import print_module

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_shipped_tables_belong_to_this_grammar() -> None:
    key = grammar_tables.shipped_key()
    assert key == grammar_tables.tables_key(grammar_tables.grammar_text()), (
        "solar/grammar/sir.tables is stale (the grammar or Lark changed): run `python -m solar.ir.grammar_tables`")


def test_tables_written_afresh_parse_like_the_shipped_ones(tmp_path: os.PathLike[str]) -> None:
    """Regenerating gives the same key, and a parser from either file builds the same module."""
    from solar.ir.parse_builder import ParseBuilder as _Builder

    path = grammar_tables.write_tables(os.path.join(tmp_path, "sir.tables"))
    assert grammar_tables.shipped_key(path) == grammar_tables.shipped_key()
    shipped = grammar_tables.load_shipped(grammar_tables.grammar_text(), _Builder())
    assert shipped is not None
    with open(os.path.join(ROOT, "examples", "matmul.sir"), encoding="utf-8") as fh:
        text = fh.read()
    assert "affine.for %k = 0 to 512" in print_module(shipped.parse(text))


def test_a_stale_key_is_refused() -> None:
    assert grammar_tables.load_shipped(grammar_tables.grammar_text() + "\n// edited\n", None) is None


def test_no_run_builds_the_tables(tmp_path: os.PathLike[str]) -> None:
    """With an empty user cache, parsing writes nothing there: the shipped tables were used."""
    cache = os.path.join(tmp_path, "cache")
    env = {**os.environ, "SOLAR_CACHE_DIR": cache}
    subprocess.run([sys.executable, "-m", "solar.tools.solar_opt", "examples/matmul.sir", "-o", os.devnull],
                   cwd=ROOT, env=env, check=True)
    assert not os.path.exists(cache) or os.listdir(cache) == []
