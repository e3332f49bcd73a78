"""docs/writing-a-pass.md stays true: every block marked `<!-- snippet: PATH -->` is a verbatim piece of PATH,
the pass it builds is registered and its lit tests exist, and the sample output is what the pass prints."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "writing-a-pass.md"
SNIPPET = re.compile(r"^<!-- snippet: (\S+) -->\n```[a-z]*\n(.*?)^```$", re.M | re.S)


def snippets() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in SNIPPET.finditer(GUIDE.read_text(encoding="utf-8"))]


def test_the_guide_has_its_snippets() -> None:
    paths = [p for p, _ in snippets()]
    assert len(paths) >= 7
    assert {"passes/print_intensity.py", "passes/__init__.py", "tests/lit/print-intensity/mlp.sir"} <= set(paths)
    # Every snippet marker is followed by a code block (a marker without one would check nothing).
    assert GUIDE.read_text(encoding="utf-8").count("<!-- snippet:") == len(paths)


@pytest.mark.parametrize(("path", "code"), snippets(), ids=lambda v: v if "\n" not in str(v) else "code")
def test_every_snippet_is_in_its_source(path: str, code: str) -> None:
    source = (REPO / path).read_text(encoding="utf-8")
    assert code in source, f"docs/writing-a-pass.md has a block of {path} that the file no longer holds"


def test_the_sample_output_is_what_the_pass_prints() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    sample = text.split("-o /dev/null\n", 1)[1].split("```", 1)[0]
    run = subprocess.run([str(Path(sys.executable).parent / "solar-opt"), "--lift-einsum", "--fuse",
                          "--print-intensity", str(REPO / "examples" / "mlp.sir"), "-o", "/dev/null"],
                         capture_output=True, text=True, timeout=120, check=True)
    printed = "\n".join(line.rstrip() for line in run.stderr.splitlines()) + "\n"
    assert printed == sample
