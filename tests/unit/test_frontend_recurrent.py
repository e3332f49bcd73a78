"""Recurrent layers under torch.export (issue 26): `aten.lstm` / `gru` / `rnn_*` stay one node each, whose
shapes export gets without torch's per-step decomposition (frontends/torch_recurrent.py). The lowering
turns each into a `solar.for` whose trip count is the sequence length as a size parameter; the counts
are the closed forms, and validation shrinks the sequence and the batch and compares against torch."""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")

from solar.frontends.torch_export import (  # noqa: E402
    callable_problem,
    load_problem,
    reference_runner,
    translate_problem,
)
from solar.frontends.torch_recurrent import recurrent_ops_whole  # noqa: E402
from solar.frontends.validate import small_sizes, validate_sized  # noqa: E402
from solar.ir.analysis.op_counts import func_counts  # noqa: E402
from solar.ir.ops import ForOp, KernelOp, ModuleOp  # noqa: E402

NETWORKS = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "network_corpus")


def _totals(module: ModuleOp, kernel_prefix: str) -> tuple[int, dict[str, int]]:
    """MACs and operation counts of the kernels whose name starts with `kernel_prefix`, over all runs."""
    values = module.param_values()
    macs, ops = 0, {}
    for func in module.funcs:
        for op, counts in func_counts(module, func, values):
            assert isinstance(op, KernelOp) and not isinstance(counts, Exception), counts
            if op.symbol.startswith(kernel_prefix):
                macs += counts.total.macs
                for name, n in counts.total.ops.items():
                    ops[name] = ops.get(name, 0) + n
    return macs, ops


def _loops(module: ModuleOp) -> list[ForOp]:
    return [op for func in module.funcs for op in func.walk() if isinstance(op, ForOp)]


def _validate(problem, tr):  # type: ignore[no-untyped-def]
    sizes = small_sizes(tr.module)
    report = validate_sized(tr.module, lambda sz: reference_runner(problem, tr, 0, sz), sizes)
    assert report.ok, report.summary()
    return report


def test_lstm_sequence_length_is_a_size_parameter_and_macs_are_the_closed_form() -> None:
    feat, hidden, layers, batch, steps = 12, 16, 2, 6, 40
    model = torch.nn.LSTM(feat, hidden, layers, batch_first=True)
    problem = callable_problem(model, [torch.randn(batch, steps, feat)], "lstm")
    tr = translate_problem(problem, "all")
    loops = _loops(tr.module)
    assert len(loops) == layers
    (seq_param,) = {str(op.upper) for op in loops}
    assert tr.module.param_values()[seq_param] == steps  # the trip count is a size parameter, full size 40
    macs, ops = _totals(tr.module, "lstm")
    # Per layer: 4 gates × (input + hidden features) × hidden × batch × steps.
    assert macs == sum(4 * (i + hidden) * hidden * batch * steps for i in (feat, hidden))
    cells = layers * batch * hidden * steps
    assert ops["sigmoid"] == 3 * cells and ops["tanh"] == 2 * cells  # i, f, o gates; g and tanh(c)
    report = _validate(problem, tr)
    assert report.sizes[seq_param] < steps and min(report.sizes.values()) < batch  # both shrank


def test_bidirectional_gru_with_an_initial_state_validates_reduced() -> None:
    feat, hidden, layers, batch, steps = 10, 8, 2, 5, 30
    model = torch.nn.GRU(feat, hidden, layers, bidirectional=True)
    problem = callable_problem(model, [torch.randn(steps, batch, feat), torch.randn(2 * layers, batch, hidden)],
                               "gru")
    tr = translate_problem(problem, "all")
    assert len(_loops(tr.module)) == 2 * layers  # one loop per layer and direction
    macs, ops = _totals(tr.module, "gru")
    # Per layer and direction: 3 gates × (input + hidden) × hidden × batch × steps; layer 1 reads both
    # directions of layer 0.
    assert macs == sum(2 * 3 * (i + hidden) * hidden * batch * steps for i in (feat, 2 * hidden))
    cells = 2 * layers * batch * hidden * steps
    assert ops["sigmoid"] == 2 * cells and ops["tanh"] == cells  # r and z; the candidate
    report = _validate(problem, tr)
    assert all(report.sizes[p] < report.full_sizes[p] for p in report.full_sizes)


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_elman_rnn_macs_and_validation(nonlinearity: str) -> None:
    feat, hidden, batch, steps = 7, 9, 3, 20
    model = torch.nn.RNN(feat, hidden, nonlinearity=nonlinearity)
    problem = callable_problem(model, [torch.randn(steps, batch, feat)], "rnn")
    tr = translate_problem(problem, "all")
    macs, _ = _totals(tr.module, "rnn")
    assert macs == (feat + hidden) * hidden * batch * steps
    _validate(problem, tr)


def test_the_network_corpus_lstm_keeps_its_512_steps_symbolic_and_validates_on_few() -> None:
    """The KernelBench-L3-sized LSTM (2 layers, 512 steps): torch's decomposition would trace 1,024 cells
    on fake tensors; lowered whole, its IR has two loops over the sequence parameter, validated short."""
    problem = load_problem(os.path.join(NETWORKS, "lstm.py"))
    tr = translate_problem(problem, "all")
    assert not tr.decomposed
    loops = _loops(tr.module)
    seq = {str(op.upper) for op in loops}
    assert len(loops) == 2 and len(seq) == 1 and tr.module.param_values()[seq.pop()] == 512
    macs, _ = _totals(tr.module, "lstm")
    assert macs == sum(4 * (i + 256) * 256 * 10 * 512 for i in (128, 256))
    report = _validate(problem, tr)
    assert max(report.sizes.values()) <= 4


def test_the_export_hook_is_scoped_and_leaves_real_tensors_to_torch() -> None:
    from torch._C import DispatchKey

    op = torch.ops.aten.lstm.input
    before = op.py_kernels[DispatchKey.Autograd]
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(4, 5)
    x = torch.randn(3, 2, 4)
    expected = lstm(x)[0]
    with recurrent_ops_whole():
        assert op.py_kernels[DispatchKey.Autograd] is not before
        inside = lstm(x)[0]  # real tensors: torch's own kernel, the same numbers
    assert op.py_kernels[DispatchKey.Autograd] is before
    assert torch.equal(inside, expected)
