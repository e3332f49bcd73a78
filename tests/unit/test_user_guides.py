"""The user guides open with an example, and the solar-opt runs they show print what they say.

Each guide in docs/ (not the maintainers' pages: architecture, IR reference, writing a pass or an op,
docs/design/) shows a command and its output before its first section. Every `$ solar-opt ... examples/...`
line of a guide is run here, and each output line the guide shows under it must be a line of the real
output (a guide may leave rows out, never change them), so the guides cannot drift from the tool."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCS = REPO_ROOT / "docs"
MAINTAINER_PAGES = {"architecture.md", "ir.md", "writing-a-pass.md", "writing-an-op.md"}
USER_GUIDES = sorted(p for p in DOCS.glob("*.md") if p.name not in MAINTAINER_PAGES)
FENCE = re.compile(r"^```[a-z]*[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


def _opening(path: Path) -> str:
    """The text before the guide's first `## ` section."""
    text = path.read_text(encoding="utf-8")
    cut = re.search(r"^## ", text, re.M)
    return text[: cut.start()] if cut else text


def test_there_are_user_guides() -> None:
    names = {p.name for p in USER_GUIDES}
    assert {"sol.md", "llm.md", "counts.md", "errors.md", "sweeps.md", "html-report.md", "training.md"} <= names


@pytest.mark.parametrize("guide", USER_GUIDES, ids=lambda p: p.name)
def test_guide_opens_with_an_example(guide: Path) -> None:
    blocks = FENCE.findall(_opening(guide))
    assert blocks, f"docs/{guide.name} has no example before its first section"
    assert any(len(block.strip().splitlines()) >= 2 for block in blocks), \
        f"docs/{guide.name}'s opening example shows no output"


def _shown_runs() -> list[object]:
    """(guide, line, argv, the output lines shown) for each `$ solar-opt` on a bundled example."""
    runs: list[object] = []
    for guide in [*USER_GUIDES, DOCS / "writing-a-pass.md"]:
        text = guide.read_text(encoding="utf-8")
        for fence in FENCE.finditer(text):
            lines = fence.group(1).splitlines()
            for i, line in enumerate(lines):
                if not line.startswith("$ solar-opt "):
                    continue
                argv = shlex.split(line[2:])[1:]
                if not any(a.startswith("examples/") for a in argv) or any(a in (";", "|") for a in argv):
                    continue
                shown = []
                for out in lines[i + 1:]:
                    if out.startswith("$ "):
                        break
                    shown.append(out)
                at = text.count("\n", 0, fence.start(1)) + i + 1
                runs.append(pytest.param(argv, shown, id=f"{guide.name}:{at}"))
    return runs


@pytest.mark.parametrize(("argv", "shown"), _shown_runs())
def test_shown_output_is_real(argv: list[str], shown: list[str], tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from solar.tools.solar_opt import run

    monkeypatch.chdir(REPO_ROOT)
    # Outputs the guide writes (a report) go to a scratch directory, never into the checkout.
    argv = [a.replace("--report=", f"--report={tmp_path}/") if a.startswith("--report=") else a for a in argv]
    run(argv)
    captured = capsys.readouterr()
    real = {line.strip() for line in (captured.out + captured.err).splitlines()}
    for line in shown:
        if line.strip() and "..." not in line and "…" not in line:
            assert line.strip() in real, f"the guide shows a line the tool does not print: {line!r}"
