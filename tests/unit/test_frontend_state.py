"""Programs whose values do not all come from inputs and weights: constants made in `forward`, constant
attributes, and who is to blame when validation cannot run."""

from __future__ import annotations

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from solar.frontends.torch_export import (  # noqa: E402
    ArgSource,
    TorchProblem,
    callable_problem,
    load_problem,
    reference_runner,
    translate_problem,
)
from solar.frontends.validate import compare_statistics, small_sizes, validate_sized  # noqa: E402
from solar.ir import print_module  # noqa: E402
from solar.ir.dtypes import DType  # noqa: E402
from solar.ir.ops import KernelOp  # noqa: E402

CASES = os.path.join(os.path.dirname(__file__), "..", "frontend_corpus", "cases")


def _validate(problem: TorchProblem, tr):  # type: ignore[no-untyped-def]
    return validate_sized(tr.module, lambda sz: reference_runner(problem, tr, 0, sz), small_sizes(tr.module))


def test_constants_made_in_forward_become_module_constants() -> None:
    problem = load_problem(os.path.join(CASES, "lifted_constant.py"))
    tr = translate_problem(problem)
    text = print_module(tr.module)
    assert "solar.constant 0.5 : tensor<f32>" in text and "solar.constant [2.0] : tensor<1xf32>" in text
    assert [(a.kind, a.key) for a in tr.args] == [("constant", "offset"), ("input", 0)]
    report = _validate(problem, tr)
    assert report.ok and report.max_abs_error == 0.0, report.summary()


def test_large_forward_constants_stay_arguments_with_exported_values() -> None:
    class Big(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + torch.tensor([float(k % 7) for k in range(5000)])

    problem = TorchProblem(Big, lambda: [torch.randn(2, 5000)], "big")
    tr = translate_problem(problem)
    assert [a.kind for a in tr.args] == ["constant", "input"] and list(tr.constants) == ["lifted_tensor_0"]
    assert _validate(problem, tr).ok


def test_a_real_failure_of_the_original_says_so() -> None:
    class FailsOnData(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if x.device.type == "cpu":  # traced on the meta device, so export never sees this
                raise ValueError("refusing CPU tensors")
            return x * 2

    problem = TorchProblem(FailsOnData, lambda: [torch.randn(2, 3)], "fails")
    tr = translate_problem(problem, dynamic="none")
    report = _validate(problem, tr)
    assert not report.ok and not report.internal
    assert report.error == "the original program failed on the validation inputs: ValueError: refusing CPU tensors"


def test_a_failure_of_the_harness_is_an_internal_error_with_its_cause() -> None:
    problem = load_problem(os.path.join(CASES, "lifted_constant.py"))
    tr = translate_problem(problem)
    tr.args[0] = ArgSource("buffer", "no_such_buffer")
    report = _validate(problem, tr)
    assert not report.ok and report.internal
    assert report.error.startswith("internal error in validation: reading the value of argument 0 (buffer "
                                   "no_such_buffer): AttributeError")


def test_state_updated_in_place_becomes_outputs() -> None:
    """`self.hidden.copy_(h0)`, `self.count.add_(...)`, `self.table.index_put_(...)`: the new values of the
    buffers follow the user's output, and validation compares them with the buffers after forward."""
    problem = load_problem(os.path.join(CASES, "inplace_state.py"))
    tr = translate_problem(problem)
    assert tr.state == ["hidden", "count", "table"]
    assert len(tr.module.entry.result_types) == 4
    report = _validate(problem, tr)
    assert report.ok and len(report.outputs) == 4, report.summary()


def test_python_numbers_among_the_inputs_are_constants() -> None:
    class Scale(torch.nn.Module):
        def forward(self, a: torch.Tensor, s: float) -> torch.Tensor:
            return a * s

    problem = TorchProblem(Scale, lambda: [torch.randn(3, 4), 3.14], "scalar")
    tr = translate_problem(problem)
    assert tr.scalars == {1: 3.14} and [a.kind for a in tr.args] == ["input"]
    assert "3.14" in print_module(tr.module)
    assert _validate(problem, tr).ok


def test_random_ops_write_their_output_and_validate_by_statistics() -> None:
    """torch.randn in forward (an LSTM's initial state), rand_like, bernoulli and training-mode dropout:
    each is a generator kernel that only writes; validation compares statistics and the header says so."""
    problem = load_problem(os.path.join(CASES, "suite_lstm_randn.py"))
    tr = translate_problem(problem)
    assert tr.module.attrs["random"] == ["aten.randn.default"]
    gen = [op for op in tr.module.entry.walk() if isinstance(op, KernelOp) and op.symbol.startswith("rand")]
    assert gen and all(not op.inputs for op in gen)  # no reads: a generator writes its output
    report = _validate(problem, tr)
    assert report.ok, report.summary()
    assert "validated by shape, dtype and statistics" in report.note
    for fn in (lambda x: torch.rand_like(x) * x, lambda x: torch.bernoulli(torch.sigmoid(x)),
               lambda x: torch.nn.functional.dropout(x, 0.3, training=True)):
        p = callable_problem(fn, [torch.randn(64, 32)], "rnd")
        t = translate_problem(p)
        assert _validate(p, t).ok


def test_statistics_fail_a_different_distribution() -> None:
    rng = np.random.default_rng(0)
    normal = rng.standard_normal(4096).astype(np.float32)
    assert compare_statistics(rng.standard_normal(4096).astype(np.float32), normal, DType.F32, 0).ok
    assert not compare_statistics(rng.uniform(size=4096).astype(np.float32), normal, DType.F32, 0).ok
    assert not compare_statistics(normal + 0.2, normal, DType.F32, 0).ok
