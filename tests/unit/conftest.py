"""Shared fixtures of the unit tests."""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.ops import ModuleOp
from solar.ir.parser import parse_module
from solar.ir.printer import print_module
from solar.ir.verifier import verify

REPO_ROOT = Path(__file__).resolve().parents[2]

# No time limit per example: `make test` must stay green beside other work on a busy machine (speed lives
# in benchmarks/). Tests that set their own settings inherit these for what they leave out.
settings.register_profile("solar", deadline=None, suppress_health_check=[HealthCheck.too_slow])
# CI (CI=true) replays the same examples every run, so that a red run is a change's fault, never the draw's;
# locally every run draws new examples, which is how the property tests find new bugs.
settings.register_profile("solar-ci", parent=settings.get_profile("solar"), derandomize=True)
settings.load_profile("solar-ci" if os.environ.get("CI") else "solar")

# check(text, name, first_line=1, verify=True) -> the parsed module
SirCheck = Callable[..., ModuleOp]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


def _check_sir(text: str, name: str, first_line: int = 1, verify_ir: bool = True) -> ModuleOp:
    """Parses `text` (reporting diagnostics in the `file:line:col` form), verifies it unless told not to,
    and checks the round trip: print(parse(print(m))) == print(m)."""
    engine = DiagnosticEngine()
    module = parse_module(text, name, engine, first_line)
    if verify_ir:
        verify(module, engine)
    assert not engine.diagnostics, f"diagnostics for {name}:\n{engine.format_all()}"
    printed = print_module(module)
    again_engine = DiagnosticEngine()
    again = parse_module(printed, f"{name} (printed)", again_engine)
    assert not again_engine.diagnostics, f"the printed form of {name} does not parse:\n{again_engine.format_all()}"
    assert print_module(again) == printed, f"{name}: print -> parse -> print changed the text"
    return module


@pytest.fixture(scope="session")
def sir_check() -> SirCheck:
    """`sir_check(text, name, first_line=1, verify_ir=True)`: parse, verify with no diagnostics, round-trip."""
    return _check_sir


@pytest.fixture(autouse=True)
def _llm_modes_keep_their_order(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every solar-llm point a test prices (`StepModel.cost`, in the test_llm* modules) keeps
    whole graph ≤ fused ≤ unfused in time (docs/sol.md): a step's figure in one mode is checked against the
    others at the same point."""
    if not request.module.__name__.startswith("test_llm"):
        return
    from solar.bench.llm_serving import StepModel

    original = StepModel.cost
    order = ("whole_graph", "fused", "unfused")

    def checked(self: StepModel, batch: int, length: int, target: str, mode: str) -> Any:
        cost = original(self, batch, length, target, mode)
        if mode in order:
            times = [original(self, batch, length, target, m).seconds for m in order]
            assert all(a <= b * (1 + 1e-9) for a, b in itertools.pairwise(times)), \
                (self.phase, batch, length, target, dict(zip(order, times, strict=True)))
        return cost

    monkeypatch.setattr(StepModel, "cost", checked)


# solar-llm keeps its last 32 exports in a process (frontends/llm_models.py); a pytest worker runs a few
# hundred, so a step that two test files export alike (Llama-3-70B's decode in test_llm_deploy.py and
# test_llm_quantized_deploy.py) was exported twice. The tests keep every one: a step's module is its SIR
# alone, a few hundred kilobytes at full size.
EXPORTS_KEPT_IN_TESTS = 4096


@pytest.fixture(autouse=True)
def _every_llm_export_kept() -> None:
    models = sys.modules.get("solar.frontends.llm_models")
    if models is not None and models._EXPORTS_KEPT < EXPORTS_KEPT_IN_TESTS:
        models._EXPORTS_KEPT = EXPORTS_KEPT_IN_TESTS
