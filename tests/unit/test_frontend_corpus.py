"""The frontend corpus: every program translates, verifies, round-trips, validates against the original
(through the executor) and its lifted FLOPs match its EXPECT (a formula, or FlopCounterMode)."""

from __future__ import annotations

import os
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("jax")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "frontend_corpus"))

import harness
from bound_invariants import check_bound_invariants

from solar.frontends.jax_export import jax_reference, translate_jax
from solar.frontends.torch_export import load_problem, reference_runner, translate_problem
from solar.frontends.validate import small_sizes, validate, validate_sized
from solar.ir import parse_and_verify, print_module


def _name(path: str) -> str:
    return os.path.basename(path)


def _check_roundtrip(module: object) -> None:
    text = print_module(module)  # type: ignore[arg-type]
    again = parse_and_verify(text, "<frontend>")
    assert print_module(again) == text


@pytest.mark.parametrize("path", harness.torch_programs(), ids=_name)
def test_torch_program(path: str) -> None:
    problem = load_problem(path)
    module = harness.load_module(path)
    tr = translate_problem(problem)
    _check_roundtrip(tr.module)
    counts = harness.lifted_counts(tr.module)
    errors = harness.check_expectations(module.EXPECT, counts, problem)
    sizes = small_sizes(tr.module)
    report = validate_sized(tr.module, lambda sz: reference_runner(problem, tr, 0, sz), sizes)
    assert report.ok, report.summary()
    assert not errors, "; ".join(errors)
    check_bound_invariants(tr.module)  # the bounds keep their order at several buffer sizes


@pytest.mark.parametrize("path", harness.jax_programs(), ids=_name)
def test_jax_program(path: str) -> None:
    module = harness.load_module(path)
    args = module.get_inputs()
    tr = translate_jax(module.forward, args, _name(path)[:-3])
    _check_roundtrip(tr.module)
    counts = harness.lifted_counts(tr.module)
    errors = harness.check_expectations(module.EXPECT, counts)
    report = validate(tr.module, jax_reference(module.forward, args, tr), {})
    assert report.ok, report.summary()
    assert not errors, "; ".join(errors)
    check_bound_invariants(tr.module)


def test_corpus_size() -> None:
    assert len(harness.torch_programs()) >= 60
    assert len(harness.jax_programs()) >= 15
