"""Sizes beyond 64 bits (issue 28, item 4): bind-params and type dimensions refuse them with one error, even
at 5,001 digits, where Python itself refuses to convert the number."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from solar.ir import parse_module
from solar.ir.diagnostics import DiagnosticEngine, DiagnosticError

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MODULE = REPO / "tests" / "lit" / "bind-params" / "invalid.sir"


@pytest.mark.parametrize("value, shown", [("9223372036854775808", "9223372036854775808"),
                                          ("1" + "0" * 30, "1" + "0" * 30),
                                          ("9" * 5001, "99999999999999999999...(5001 digits)")])
def test_bind_params_beyond_64_bits_is_out_of_range(value: str, shown: str) -> None:
    run = subprocess.run([str(BIN / "solar-opt"), f"--bind-params=M={value}", str(MODULE)], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 1
    assert f"error: bind-params: M = {shown} is out of range: a size must fit in 64 bits" in run.stderr


def test_a_type_dimension_of_5001_digits_is_a_located_error() -> None:
    text = "solar.module @m {\n  solar.func @f(%x: tensor<" + "7" * 5001 + "xf32>) {\n    solar.return\n  }\n}\n"
    engine = DiagnosticEngine()
    with pytest.raises(DiagnosticError):
        parse_module(text, "t.sir", engine)
    assert any("dimension of 5001 digits in a type is out of range" in d.message and d.loc.line == 2
               for d in engine.diagnostics), [d.message for d in engine.diagnostics]
