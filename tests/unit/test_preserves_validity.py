"""A pass that declares `preserves_validity` (sol) is not followed by a verification: the skipped check would have
found nothing (the verifier reads no attribute such a pass adds), and every other pass is still verified."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

import pytest

from solar.ir.diagnostics import DiagnosticEngine, DiagnosticError
from solar.ir.expr import NameRef
from solar.ir.ops import ModuleOp
from solar.ir.parser import parse_module
from solar.ir.pass_manager import Pass, PassContext, PassManager
from solar.ir.verifier import verify
from solar.passes import PASSES
from solar.passes.fuse import Fuse
from solar.passes.lift_einsum import LiftEinsum
from solar.passes.sol import SOL

LIT = Path(__file__).resolve().parents[1] / "lit"
INPUTS = [LIT / "sol" / "attributes.sir", LIT / "sol" / "dead-code.sir", LIT / "sol" / "loop-window.sir"]


def _parsed(path: Path) -> tuple[ModuleOp, DiagnosticEngine]:
    engine = DiagnosticEngine()
    module = parse_module(path.read_text(), path.name, engine)
    assert not engine.has_errors, engine.format_all()
    return module, engine


def _validity_preserving() -> list[str]:
    names = []
    for name, target in PASSES.items():
        module, cls = target.split(":")
        if getattr(importlib.import_module(module), cls).preserves_validity:
            names.append(name)
    return names


def test_sol_is_the_pass_that_declares_it() -> None:
    assert _validity_preserving() == ["sol"]


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_the_skipped_verification_finds_nothing(path: Path) -> None:
    module, engine = _parsed(path)
    manager = PassManager([LiftEinsum(), Fuse(), SOL(target="h100,b200")])
    module = manager.run(module, PassContext(engine, lambda _: None))
    assert [t.name for t in manager.timings] == ["lift-einsum", "(verify after lift-einsum)", "fuse",
                                                "(verify after fuse)", "sol"]
    assert "sol" in module.attrs  # it did annotate
    assert verify(module, engine), engine.format_all()  # the slow path: the check the pass manager skipped


def test_the_verifier_reads_no_sol_attribute() -> None:
    module, engine = _parsed(INPUTS[0])
    for op in module.walk():
        op.attrs["sol"] = ["not a report", -1]
    assert verify(module, engine), engine.format_all()


@dataclass(frozen=True)
class _Breaks(Pass):
    """A pass that leaves the module invalid (a kernel result typed with an undeclared size parameter)."""

    name: ClassVar[str] = "breaks"

    def apply(self, ctx: PassContext, module: ModuleOp) -> ModuleOp | None:
        module.attrs["sol"] = []
        output = next(op for op in module.walk() if op.opname == "solar.kernel").outputs[0]
        output.type = replace(output.type, shape=(NameRef("UNDECLARED"), *output.type.shape[1:]))
        return None


def test_a_pass_without_the_flag_is_still_verified() -> None:
    module, engine = _parsed(INPUTS[0])
    manager = PassManager([_Breaks()])
    with pytest.raises(DiagnosticError):
        manager.run(module, PassContext(engine, lambda _: None))
    assert "the IR is invalid after pass 'breaks'" in engine.format_all()
    assert "UNDECLARED" in engine.format_all()
