"""Hints that go by meaning: an unknown operation named as other IRs name it gets SOLAR's op for that
meaning, and a target unknown on the command line is the command line's error."""

from __future__ import annotations

from pathlib import Path

import pytest

from solar.ir.parse_builder import unknown_operation
from solar.tools.solar_opt import run

MLP = Path(__file__).resolve().parents[2] / "examples" / "mlp.sir"


@pytest.mark.parametrize(("name", "meant"), [("solar.transpose", "solar.permute"), ("solar.view", "solar.reshape"),
                                             ("solar.cat", "solar.concat"), ("solar.permut", "solar.permute"),
                                             ("solar.tranpose", "solar.permute"), ("solar.mm", "solar.einsum"),
                                             ("solar.bmm", "solar.einsum"), ("affine.fr", "affine.for")])
def test_did_you_mean_by_meaning(name: str, meant: str) -> None:
    assert unknown_operation(name) == f"unknown operation '{name}'; did you mean '{meant}'?"


def test_pointwise_arithmetic_is_sent_to_the_kernel_body() -> None:
    # `solar.add` was "did you mean 'solar.call'" by letters; `solar.mm` "'solar.cummin'".
    assert unknown_operation("solar.add") == ("unknown operation 'solar.add'; pointwise arithmetic is a statement of a "
                                              "solar.kernel body, e.g. `Y[%i] = X[%i] + Z[%i]` (docs/ir.md)")


def test_no_hint_from_the_dialect_prefix_alone() -> None:
    # `solar.zzzz` is close to `solar.if` only through `solar.`: no hint beats a wrong one.
    assert unknown_operation("solar.zzzz") == "unknown operation 'solar.zzzz'"
    assert unknown_operation("foo.bar") == "unknown operation 'foo.bar'"


def test_unknown_target_is_located_at_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert run([str(MLP), "--sol=h10", "-o", "/dev/null"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("solar-opt: error: sol: unknown target 'h10': did you mean h100")
    assert "mlp.sir:" not in err
