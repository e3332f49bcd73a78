"""The PyTorch frontend: the lowering table, size parameters, source locations, unsupported ops reported
together, decomposition as a fallback, recurrent ops lowered whole."""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")

from solar.frontends.diagnostics import TranslationError, user_frame  # noqa: E402
from solar.frontends.lowering import TORCH_LOWERINGS  # noqa: E402
from solar.frontends.lowering.core import LoweringError  # noqa: E402
from solar.frontends.torch_export import (  # noqa: E402
    callable_problem,
    load_problem,
    reference_runner,
    translate_problem,
)
from solar.frontends.validate import small_sizes, validate_sized  # noqa: E402
from solar.ir import print_module  # noqa: E402
from solar.ir.ops import ForOp, KernelOp  # noqa: E402

CASES = os.path.join(os.path.dirname(__file__), "..", "frontend_corpus", "cases")


def case(name: str) -> str:
    return os.path.join(CASES, name)


def test_table_covers_at_least_150_real_aten_ops() -> None:
    names = [k.split("::")[1] for k in TORCH_LOWERINGS]
    missing = [n for n in names if not hasattr(torch.ops.aten, n)]
    assert not missing, f"registered names that are not ATen ops: {missing}"
    assert len(names) >= 150
    for family in ("conv2d", "conv_transpose3d", "max_pool2d", "adaptive_avg_pool2d", "batch_norm", "layer_norm",
                   "group_norm", "instance_norm", "rms_norm", "softmax", "log_softmax", "argmax", "cumsum",
                   "cross_entropy_loss", "nll_loss", "mse_loss", "smooth_l1_loss", "kl_div", "hinge_embedding_loss",
                   "triplet_margin_loss", "cosine_similarity", "embedding", "gather", "index_select", "scatter",
                   "cat", "stack", "split", "chunk", "view", "permute", "expand", "slice", "where", "masked_fill",
                   "scaled_dot_product_attention", "lstm", "gru", "matmul", "addmm", "bmm", "linear"):
        assert f"aten::{family}" in TORCH_LOWERINGS, family


def test_batch_is_a_size_parameter_with_the_full_default() -> None:
    problem = load_problem(case("relu_batch.py"))
    tr = translate_problem(problem)
    module = tr.module
    assert [(p.name, p.default) for p in module.params] == [("BATCH", 4096)]
    text = print_module(module)
    assert "tensor<BATCHx16xf32>" in text and "affine.for %i0 = 0 to BATCH" in text
    sizes = small_sizes(module)
    assert sizes == {"BATCH": 2}
    report = validate_sized(module, lambda sz: reference_runner(problem, tr, 3, sz), sizes, seed=3)
    assert report.ok and report.reduced and report.seed == 3
    assert report.full_sizes == {"BATCH": 4096}


def test_kernels_carry_their_source_line() -> None:
    tr = translate_problem(load_problem(case("relu_batch.py")))
    kernel = next(op for op in tr.module.funcs[0].walk() if isinstance(op, KernelOp))
    assert kernel.src_loc is not None and kernel.src_loc.file.endswith("relu_batch.py")
    assert kernel.src_loc.line == 7
    assert 'loc("' in print_module(tr.module)


def test_unsupported_ops_are_reported_together_with_lines() -> None:
    with pytest.raises(TranslationError) as info:
        translate_problem(load_problem(case("unsupported.py")))
    err = info.value
    assert err.ops == ["aten.histc.default", "aten.mode.default", "aten.nanmedian.dim"]
    text = err.format()
    for line, op in ((8, "aten.mode.default"), (9, "aten.nanmedian.dim"), (11, "aten.histc.default")):
        assert f"unsupported.py:{line}:9: error: unsupported op {op}" in text
    assert "torch.mode(x, dim=1)" in text  # the source line is quoted
    assert "logaddexp" not in text  # it decomposes into supported ops


def test_decomposition_is_a_fallback_for_ops_without_lowering() -> None:
    problem = load_problem(case("decomposed.py"))
    tr = translate_problem(problem)
    assert tr.decomposed
    report = validate_sized(tr.module, lambda sz: reference_runner(problem, tr, 0, sz), small_sizes(tr.module))
    assert report.ok, report.summary()


def test_lstm_is_lowered_before_decomposition() -> None:
    model = torch.nn.LSTM(32, 64, num_layers=2, batch_first=True)
    # Decomposing aten.lstm takes ~100 s (shared/FACTS.md): the IR shows it was lowered whole instead.
    tr = translate_problem(callable_problem(model, [torch.randn(4, 50, 32)], "lstm"))
    assert not tr.decomposed
    loops = [op for op in tr.module.funcs[0].walk() if isinstance(op, ForOp)]
    assert len(loops) == 2 and all(str(op.upper) == "50" for op in loops)


def test_entry_callable_problem_validates() -> None:
    def fn(x, y):
        return torch.tanh(x @ y).mean(dim=0)

    problem = callable_problem(fn, [torch.randn(6, 5), torch.randn(5, 3)], "fn")
    tr = translate_problem(problem)
    report = validate_sized(tr.module, lambda sz: reference_runner(problem, tr, 0, sz), small_sizes(tr.module))
    assert report.ok, report.summary()


def test_unsupported_dtype_names_the_type() -> None:
    def fn(x):
        return x + 1

    with pytest.raises((TranslationError, LoweringError)) as info:
        translate_problem(callable_problem(fn, [torch.ones(3, dtype=torch.complex64)], "c64"))
    assert "torch.complex64" in str(info.value)


def test_user_frame_skips_framework_frames() -> None:
    trace = (f'File "/tmp/no_such_model.py", line 12, in forward\n    y = self.fc(x)\n'
             f'  File "{os.path.dirname(torch.__file__)}/nn/modules/linear.py", line 125, in forward\n'
             "    return F.linear(input, self.weight, self.bias)\n")
    frame = user_frame(trace)
    assert frame is not None and (frame.file, frame.line, frame.col) == ("/tmp/no_such_model.py", 12, 5)
    assert frame.code == "y = self.fc(x)"
    assert user_frame(None) is None
