"""The user guides open with an example and its output, and the output is what the tool prints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_sol_guide_opens_with_what_solar_opt_prints() -> None:
    text = (REPO / "docs" / "sol.md").read_text(encoding="utf-8")
    block = text.split("```\n$ ", 1)[1].split("```", 1)[0]
    command, *sample = block.splitlines()
    assert command.startswith("solar-opt ")
    args = command.split()[1:]
    run = subprocess.run([str(Path(sys.executable).parent / "solar-opt"), *args], cwd=REPO, capture_output=True,
                         text=True, timeout=120, check=True)
    printed = [line.rstrip() for line in run.stdout.splitlines() + run.stderr.splitlines()]
    assert sample and all(line in printed for line in sample)


def test_the_implementation_notes_live_in_design_pages_the_guides_link() -> None:
    llm = (REPO / "docs" / "llm.md").read_text(encoding="utf-8")
    assert "(design/llm-steps.md)" in llm
    design = (REPO / "docs" / "design" / "llm-steps.md").read_text(encoding="utf-8")
    for how in ("**Branches on sizes.**", "**Layer twins.**", "**Sliding windows with `--cache static`.**",
                "**Masks as where-clauses**"):
        assert how in design and how not in llm
