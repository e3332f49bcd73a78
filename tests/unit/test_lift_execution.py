"""Lifting keeps meaning: for every example, the IR after --lift-einsum, run by the Numba backend, gives the
same outputs as the loop IR on the same seeded inputs (issue 4, item 6)."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from solar.backends.dtypes import default_tolerance
from solar.backends.executor import prepare
from solar.backends.inputs import compare, random_inputs
from solar.ir import DiagnosticEngine, EinsumOp, ModuleOp, load, verify
from solar.ir.ops import KernelOp, SliceOp
from solar.ir.parser import parse_module
from solar.ir.pass_manager import PassContext, PassManager
from solar.passes import registry

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO_ROOT / "examples").glob("*.sir"))
# Small sizes for the examples whose defaults are analysis sizes (as in test_backend_examples.py).
PARAMS = {"mlp": {"B": 16}, "params": {"S": 32, "D": 64, "FF": 48}}


def lifted(module: ModuleOp) -> ModuleOp:
    copy_ = copy.deepcopy(module)
    engine = DiagnosticEngine()
    PassManager(registry.parse_pipeline("lift-einsum")).run(copy_, PassContext(engine, report=lambda _: None))
    assert verify(copy_, engine), engine.format_all()
    return copy_


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_lifted_ir_runs_like_the_loop_ir(path: Path) -> None:
    loops = load(str(path))
    einsums = lifted(loops)
    params = PARAMS.get(path.stem, {})
    before, after = prepare(loops, params), prepare(einsums, params)
    inputs = random_inputs(before, seed=3)
    expected, actual = before(inputs), after(inputs)
    assert len(expected) == len(actual)
    for k, (want, got, t) in enumerate(zip(expected, actual, before.result_types, strict=True)):
        tol = default_tolerance(t.dtype)
        scale = max(1.0, float(np.abs(np.asarray(want, dtype=np.float64)).max()))
        result = compare(f"out{k}", got, want, t.dtype, tol.rtol, tol.atol * scale)
        assert result.ok, f"{path.name} out{k}: max abs {result.max_abs:.3g}, max rel {result.max_rel:.3g}"


def test_most_examples_really_lift() -> None:
    """The equality above is not vacuous: the examples' kernels do become einsums."""
    lifted_any = [p.stem for p in EXAMPLES if any(isinstance(op, EinsumOp) for op in lifted(load(str(p))).walk())]
    assert len(lifted_any) >= len(EXAMPLES) - 1, lifted_any


PARTIAL_READS = {  # a kernel reading part of an operand lifts through a slice of it (lit: partial-reads.sir)
    "head": ("%x: tensor<16xf32>", "tensor<8xf32>", "affine.for %i = 0 to 8 { Y[%i] = X[%i] * 2.0 }"),
    "diff": ("%x: tensor<16xf32>", "tensor<15xf32>", "affine.for %i = 0 to 15 { Y[%i] = X[%i + 1] - X[%i] }"),
    "block": ("%x: tensor<8x8xf32>, %w: tensor<8x8xf32>", "tensor<4x4xf32>",
              "affine.for %i = 0 to 4 { affine.for %j = 0 to 4 { affine.for %k = 0 to 8 {"
              " Y[%i, %j] += X[%i, %k] * W[%k, %j] } } }"),
}


@pytest.mark.parametrize("name", sorted(PARTIAL_READS))
def test_partial_reads_lift_and_run_like_the_loops(name: str) -> None:
    args, out, body = PARTIAL_READS[name]
    binds = ", ".join(f"%{a.split(':')[0][1:]} as {a.split(':')[0][1:].upper()}" for a in args.split(", "))
    text = (f"solar.func @{name}({args}) -> {out} {{\n  %y = solar.kernel @{name}({binds}) -> (Y: {out}) {{\n"
            f"    {body}\n  }}\n  solar.return %y\n}}\n")
    engine = DiagnosticEngine()
    loops = parse_module(text, f"{name}.sir", engine)
    assert verify(loops, engine), engine.format_all()
    einsums = lifted(loops)
    assert any(isinstance(op, SliceOp) for op in einsums.walk())
    assert not any(isinstance(op, KernelOp) for op in einsums.walk())
    before, after = prepare(loops, {}), prepare(einsums, {})
    inputs = random_inputs(before, seed=5)
    np.testing.assert_allclose(after(inputs)[0], before(inputs)[0], rtol=1e-6, atol=1e-6)
