"""Every valid input of tests/lit/parser/ prints, parses and prints again to the same text, through
`solar-opt` itself (its `run(argv)`, in this process: one interpreter for all files instead of two per file;
lit keeps the golden outputs)."""

from __future__ import annotations

import os

import pytest

from solar.tools.solar_opt import run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The inputs that print canonically (the others pin diagnostics or non-canonical spellings; lit checks them).
NAMES = ("bare-funcs", "composition-ops", "control-flow", "einsum-group", "empty", "expressions", "kernel-loops",
         "locations", "module", "reductions", "scalar-functions", "types")
INPUTS = [os.path.join(ROOT, "tests", "lit", "parser", f"{name}.sir") for name in NAMES]


def test_the_inputs_exist() -> None:
    assert all(os.path.exists(p) for p in INPUTS)


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: os.path.basename(p))
def test_print_parse_print_is_the_identity(path: str, tmp_path: os.PathLike[str]) -> None:
    first = os.path.join(tmp_path, "1.sir")
    second = os.path.join(tmp_path, "2.sir")
    assert run([path, "-o", first]) == 0
    assert run([first, "-o", second]) == 0
    with open(first, encoding="utf-8") as a, open(second, encoding="utf-8") as b:
        text = a.read()
        assert text == b.read()
    assert text.startswith("solar.module") or "solar.func" in text or text.strip() == ""
