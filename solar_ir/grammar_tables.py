"""The SIR grammar's LALR tables, shipped as package data (`solar/grammar/sir.tables`) so that no run of any
tool rebuilds them: building them from `sir.lark` costs ~0.3 s, loading them a few milliseconds.

The file starts with a key line: a digest of the grammar text, the Lark options and Lark's version. When
the key does not match (the grammar was edited, another Lark is installed), the parser builds the tables
and keeps them in the user's cache instead (parser.py), so a stale file costs one slow start, never a
wrong parse. tests/unit/test_grammar_tables.py fails while the shipped file is stale;

    python -m solar.ir.grammar_tables

regenerates it.
"""

from __future__ import annotations

import hashlib
import os
from importlib import resources
from typing import Any

import lark

TABLES_FILE = "sir.tables"
# The options every SIR parser is built with (the transformer is given when loading: it is not data).
LARK_OPTIONS: dict[str, Any] = {
    "parser": "lalr",
    "lexer": "contextual",
    "strict": True,
    # Every IR object takes its position from a token; no rule needs Lark's `meta`.
    "propagate_positions": False,
    "maybe_placeholders": True,
    "start": "file",
}
_NOT_DATA = ("transformer", "postlex", "lexer_callbacks", "edit_terminals", "_plugins")


def grammar_text() -> str:
    return resources.files("solar.grammar").joinpath("sir.lark").read_text(encoding="utf-8")


def tables_key(grammar: str) -> str:
    options = ",".join(f"{k}={LARK_OPTIONS[k]!r}" for k in sorted(LARK_OPTIONS))
    return hashlib.sha256(f"{grammar}\0{options}\0lark {lark.__version__}".encode()).hexdigest()


def shipped_path() -> str:
    return str(resources.files("solar.grammar").joinpath(TABLES_FILE))


def shipped_key(path: str | None = None) -> str | None:
    try:
        with open(path or shipped_path(), "rb") as fh:
            return fh.readline().decode("ascii", "replace").strip()
    except OSError:
        return None


def load_shipped(grammar: str, transformer: Any) -> lark.Lark | None:
    """The parser from the shipped tables, or None when they are missing or stale."""
    try:
        with open(shipped_path(), "rb") as fh:
            if fh.readline().decode("ascii", "replace").strip() != tables_key(grammar):
                return None
            parser = lark.Lark.__new__(lark.Lark)
            # Lark's public `load` takes no transformer; `_load` is what Lark's own cache uses.
            return parser._load(fh, transformer=transformer)
    except (OSError, EOFError, ValueError, KeyError):
        return None


def write_tables(path: str | None = None) -> str:
    """Builds the tables from the grammar and writes them (atomically) with their key; returns the path."""
    path = path or shipped_path()
    grammar = grammar_text()
    parser = lark.Lark(grammar, **LARK_OPTIONS)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as fh:
        fh.write(tables_key(grammar).encode("ascii") + b"\n")
        parser.save(fh, _NOT_DATA)
    os.replace(tmp, path)
    return path


if __name__ == "__main__":  # pragma: no cover - a maintainer's command
    print(f"wrote {write_tables()}")
