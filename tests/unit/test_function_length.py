"""Issue 42, item 1: no function in passes/, backends/, bench/ or api/ over 60 lines without saying why: a
"Longer than most: ..." sentence in its docstring or in the comment just above its `def`."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 60
WHY = "Longer than most"


def _says_why(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> bool:
    if WHY in " ".join((ast.get_docstring(node) or "").split()):
        return True
    above = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 2  # the line above, 0-based
    comment: list[str] = []
    while above >= 0 and lines[above].lstrip().startswith("#"):
        comment.insert(0, lines[above].lstrip().lstrip("#"))
        above -= 1
    return WHY in " ".join(" ".join(comment).split())


def long_functions_without_a_why(root: Path) -> list[str]:
    found = []
    for folder in ("passes", "backends", "bench", "api"):
        for path in sorted((root / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            lines = text.splitlines()
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    length = (node.end_lineno or node.lineno) - node.lineno + 1
                    if length > LIMIT and not _says_why(node, lines):
                        found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_every_long_function_says_why() -> None:
    assert long_functions_without_a_why(ROOT) == []


def test_the_check_finds_a_long_function_that_does_not_say_why(tmp_path: Path) -> None:
    body = "".join(f"    x{k} = {k}\n" for k in range(LIMIT))
    (tmp_path / "passes").mkdir()
    (tmp_path / "passes" / "p.py").write_text(f"def quiet():\n{body}\n\n# {WHY}: a table.\ndef told():\n{body}")
    assert long_functions_without_a_why(tmp_path) == ["passes/p.py:1 quiet (61 lines)"]
