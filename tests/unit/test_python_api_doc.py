"""Every ```python block of docs/python-api.md runs, in order, in one namespace (as a notebook would), so the
page cannot drift from the API. Each block is compiled under the page's own name and line numbers: the source
lines it reports are lines of the page."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "python-api.md"
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


def blocks() -> list[tuple[int, str]]:
    text = PAGE.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in FENCE.finditer(text)]


def test_the_page_has_blocks() -> None:
    assert len(blocks()) >= 6


def test_every_block_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "python_api_doc"}
    for line, block in blocks():
        code = compile("\n" * (line - 1) + block, str(PAGE), "exec")
        try:
            exec(code, namespace)
        except Exception as err:
            raise AssertionError(f"{PAGE.name}:{line}: the block fails: {type(err).__name__}: {err}") from err
    analysis = namespace["analysis"]
    lines = analysis.by_source_line()  # type: ignore[attr-defined]
    assert {ln.file for ln in lines} == {str(PAGE)}
    assert lines[0].code.startswith(("h = torch.nn.functional.gelu", "return self.down(h) + x"))
    for name in ("mlp.html", "mlp.png", "mlp.json"):
        assert os.path.getsize(tmp_path / name) > 0
