"""Diagnostics: the `file:line:col: error:` form, the quoted line, the caret, several errors at once."""

from __future__ import annotations

import pytest

from solar.ir.diagnostics import DiagnosticEngine, DiagnosticError
from solar.ir.parser import parse_module
from solar.ir.verifier import verify

KERNEL = """solar.func @f(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = solar.kernel @k(%x as X) -> (Y: tensor<4x4xf32>) {
    affine.for %i = 0 to 4 {
      affine.for %j = 0 to 4 {
        Y[%i, %j] = X[%i * %j, %j] + X[%i]
      }
    }
  }
  solar.return %z
}
"""


def test_several_errors_in_one_run_with_source_and_caret() -> None:
    engine = DiagnosticEngine()
    module = parse_module(KERNEL, "k.sir", engine)
    verify(module, engine)
    text = engine.format_all()
    assert text.splitlines()[:3] == [
        "k.sir:9:16: error: use of undefined value %z",
        "  solar.return %z",
        "               ^",
    ]
    assert "k.sir:5:23: error: an index of X must be affine: `%i * %j` multiplies two variables" in text
    assert "k.sir:5:38: error: X has rank 2 but is indexed with 1 index" in text
    assert sum(d.severity == "error" for d in engine.diagnostics) == 3


def test_syntax_error_names_what_was_expected() -> None:
    with pytest.raises(DiagnosticError) as info:
        parse_module("solar.func @f(%x tensor<4xf32>) -> tensor<4xf32> {\n  solar.return %x\n}\n", "s.sir")
    (diag,) = info.value.diagnostics
    assert (diag.loc.line, diag.loc.col) == (1, 18)
    assert diag.message == "expected ':', found 'tensor<4xf32>'"


def test_bad_type_points_inside_the_type() -> None:
    with pytest.raises(DiagnosticError) as info:
        parse_module("solar.func @f(%x: tensor<4xf33>) -> tensor<4xf32> {\n  solar.return %x\n}\n", "t.sir")
    (diag,) = info.value.diagnostics
    assert diag.message == "unknown element type 'f33' in 'tensor<4xf33>'"
    assert (diag.loc.line, diag.loc.col) == (1, 28)  # the element type inside the type


def test_first_line_offset_keeps_line_numbers() -> None:
    engine = DiagnosticEngine()
    parse_module("solar.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n  solar.return %q\n}\n", "c.sir", engine,
                 first_line=10)
    assert engine.diagnostics[0].loc.line == 11
    assert "solar.return %q" in engine.format_all()
