"""Every ```sir block of docs/ir.md and README.md parses, verifies and round-trips, so the docs cannot drift."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from solar.ir.ops import ModuleOp

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCS = [p for p in (REPO_ROOT / "docs" / "ir.md", REPO_ROOT / "README.md") if p.exists()]
SirCheck = Callable[..., ModuleOp]  # the `sir_check` fixture of conftest.py

FENCE = re.compile(r"^```sir[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


def sir_blocks(path: Path) -> list[tuple[int, str]]:
    """(line of the block's first line, text) for each ```sir block."""
    text = path.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in FENCE.finditer(text)]


def _params() -> list[object]:
    return [pytest.param(path, line, block, id=f"{path.name}:{line}")
            for path in DOCS for line, block in sir_blocks(path)]


def test_reference_has_sir_blocks() -> None:
    assert (REPO_ROOT / "docs" / "ir.md").exists()
    assert len(sir_blocks(REPO_ROOT / "docs" / "ir.md")) >= 5


def test_every_fence_is_closed() -> None:
    for path in DOCS:
        opened = len(re.findall(r"^```sir[ \t]*$", path.read_text(encoding="utf-8"), re.M))
        assert opened == len(sir_blocks(path)), f"{path.name}: a ```sir block is not closed"


@pytest.mark.parametrize(("path", "line", "block"), _params())
def test_doc_block(path: Path, line: int, block: str, sir_check: SirCheck) -> None:
    # Diagnostics name the markdown file and the line inside it.
    sir_check(block, str(path.relative_to(REPO_ROOT)), first_line=line)


def _documented_ops() -> list[object]:
    text = (REPO_ROOT / "docs" / "ir.md").read_text(encoding="utf-8")
    named = sorted(set(re.findall(r"`(?:[^`]*?\s)?((?:solar|affine)\.[a-z_]+)", text)))
    return [pytest.param(op, id=op) for op in named]


@pytest.mark.parametrize("op", _documented_ops())
def test_documented_op_has_an_example(op: str) -> None:
    """Each `solar.X` / `affine.X` op named in the reference appears in one of its code blocks."""
    code = "\n".join(block for _, block in sir_blocks(REPO_ROOT / "docs" / "ir.md"))
    assert re.search(re.escape(op) + r"\b", code), f"docs/ir.md names {op} but no ```sir block uses it"
