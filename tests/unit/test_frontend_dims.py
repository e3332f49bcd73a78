"""Validation shrinks every dimension it can: `--dynamic all` export with dim-by-dim fallback, the header
lines saying which dims shrank and which could not (and why), the least sizes export allows, and a
reference model built without layer initialisers."""

from __future__ import annotations

from typing import Any
from unittest import mock

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from solar.frontends.export_dims import all_dims, size_lines  # noqa: E402
from solar.frontends.reference_model import build_reference, seeded_weights  # noqa: E402
from solar.frontends.torch_export import callable_problem, reference_runner, translate_problem  # noqa: E402
from solar.frontends.validate import ValidationReport, small_sizes, validate_sized  # noqa: E402


class _Linear(torch.nn.Module):
    def __init__(self, d: int = 6, h: int = 5) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(d, h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


def _translate(fn: object, *inputs: torch.Tensor) -> tuple[object, object]:
    problem = callable_problem(fn, list(inputs), "t")
    return problem, translate_problem(problem, "all")


def test_every_free_dim_becomes_a_parameter_and_a_weight_tied_dim_is_explained() -> None:
    problem, tr = _translate(_Linear(), torch.randn(3, 7, 6))
    assert tr.params == {"BATCH": 3, "X_1": 7}  # forward(x): x axis 1
    assert tr.param_dims == {"BATCH": [(0, 0)], "X_1": [(0, 1)]}
    assert tr.fixed_dims == ["x dim 2 (6): tied to the fixed-size weight fc.weight [5, 6]"]
    sizes = small_sizes(tr.module, 2, minimum=tr.param_min)
    assert sizes == {"BATCH": 2, "X_1": 2}
    report = validate_sized(tr.module, lambda sz: reference_runner(problem, tr, 0, sz), sizes)
    assert report.ok and report.sizes == {"BATCH": 2, "X_1": 2}
    assert size_lines(tr.params, tr.param_dims, tr.input_names, report.sizes, tr.fixed_dims) == [
        "reduced dims: BATCH 3 -> 2 (x dim 0); X_1 7 -> 2 (x dim 1)",
        "fixed (cannot shrink): x dim 2 (6): tied to the fixed-size weight fc.weight [5, 6]"]


def test_a_product_of_two_symbolic_dims_fixes_one_of_them() -> None:
    """flatten(1) of [B, C, H] gives C*H, which SIR cannot express with both symbolic: the last one named
    goes back to static and the other stays a parameter."""
    _, tr = _translate(lambda x: torch.flatten(x, 1) * 2.0, torch.randn(3, 4, 5))
    assert set(tr.params) == {"BATCH", "DIM1"} and tr.params["DIM1"] == 4
    assert len(tr.fixed_dims) == 1 and tr.fixed_dims[0].startswith("input 0 dim 2 (5): its size enters an expression")


def test_least_sizes_export_allows_are_respected() -> None:
    conv = torch.nn.Conv1d(2, 3, kernel_size=5)
    problem, tr = _translate(conv, torch.randn(4, 2, 16))
    assert tr.params == {"BATCH": 4, "DIM1": 16}
    assert tr.param_min["DIM1"] == 5  # the input must cover the kernel
    sizes = small_sizes(tr.module, 2, minimum=tr.param_min)
    assert sizes == {"BATCH": 2, "DIM1": 5}
    assert validate_sized(tr.module, lambda sz: reference_runner(problem, tr, 0, sz), sizes).ok


def test_all_dims_skips_unit_dims() -> None:
    assert all_dims([torch.empty(1, 3, 4), torch.empty(2), 5]) == {(0, 1), (0, 2), (1, 0)}


def test_the_reference_runs_no_layer_initialiser_and_is_reproducible() -> None:
    with mock.patch.object(torch.nn.init, "kaiming_uniform_", side_effect=AssertionError("initialiser ran")):
        a = build_reference(lambda: _Linear(64, 32), seed=5)
    b = build_reference(lambda: _Linear(64, 32), seed=5)
    assert torch.equal(a.fc.weight, b.fc.weight) and torch.equal(a.fc.bias, b.fc.bias)
    # N(0, 1/fan-in): the weight's spread is about 1/8 for fan-in 64.
    assert 0.1 < float(a.fc.weight.detach().std()) < 0.15
    c = build_reference(lambda: _Linear(64, 32), seed=6)
    assert not torch.equal(a.fc.weight, c.fc.weight)


def test_seeded_weights_keep_buffers_the_constructor_computed() -> None:
    class WithMask(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("mask", torch.tril(torch.ones(4, 4)))
            self.w = torch.nn.Parameter(torch.zeros(4, 4))

    m = WithMask()
    seeded_weights(m, 0)
    assert torch.equal(m.mask, torch.tril(torch.ones(4, 4)))
    assert float(m.w.detach().abs().sum()) > 0


def test_validation_falls_back_to_batch_only_before_full_size() -> None:
    """An original that fails unless its non-batch dim is full keeps the batch reduced."""
    from solar.ir import parse_and_verify

    module = parse_and_verify("""
solar.module @m [BATCH = 8, DIM1 = 6] {
  solar.func @f(%x: tensor<BATCHxDIM1xf32>) -> tensor<BATCHxDIM1xf32> {
    %y = solar.kernel @k(%x as X) -> (Y: tensor<BATCHxDIM1xf32>) {
      affine.for %i = 0 to BATCH {
        affine.for %j = 0 to DIM1 {
          Y[%i, %j] = X[%i, %j]
        }
      }
    }
    solar.return %y
  }
}
""")

    def case_for(sizes: dict[str, int]):  # type: ignore[no-untyped-def]
        def run() -> tuple[list[np.ndarray], list[np.ndarray]]:
            if sizes["DIM1"] != 6:
                raise ValueError("needs 6 columns")
            x = np.ones((sizes["BATCH"], 6), np.float32)
            return [x], [x]
        return run

    report: ValidationReport = validate_sized(module, case_for, {"BATCH": 2, "DIM1": 2})
    assert report.ok and report.sizes == {"BATCH": 2, "DIM1": 6}
    assert "only the batch dims are reduced" in report.note


class _Attention(torch.nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)


def test_attention_keeps_a_symbolic_head_size_with_its_scale_an_expression_of_it() -> None:
    """The default scale 1/sqrt(E) of a symbolic head size is `rsqrt(cast<f32>(E))` of its parameter, so no
    dimension is fixed: every one shrinks in validation, and the counts equal the static translation's."""
    from solar.ir.analysis.counts import kernel_counts
    from solar.ir.analysis.kernel_models import model_kernels
    from solar.ir.diagnostics import DiagnosticEngine
    from solar.ir.printer import print_module

    shape = (2, 3, 8, 16)
    inputs = [torch.randn(*shape) for _ in range(3)]
    problem, tr = _translate(_Attention(), *inputs)
    assert tr.fixed_dims == [] and len(tr.params) == 6  # batch, heads, lengths, head size, value width
    head = next(p for p, dims in tr.param_dims.items() if (0, 3) in dims)
    assert f"rsqrt(cast<f32>({head}))" in print_module(tr.module)
    sizes = small_sizes(tr.module, 2, minimum=tr.param_min)
    report = validate_sized(tr.module, lambda sz: reference_runner(problem, tr, 0, sz), sizes)
    assert report.ok and report.sizes[head] == 2

    def counts(module: object, values: dict[str, int]) -> tuple[int, int]:
        ((_, model),) = model_kernels(module, DiagnosticEngine())
        c = kernel_counts(model, values)
        return c.flops_tensor, c.flops_vector

    static = translate_problem(callable_problem(_Attention(), inputs, "t"), "none")
    assert counts(tr.module, tr.params) == counts(static.module, {})


class _ConvPool(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.adaptive_avg_pool2d(torch.relu(self.conv(x)), 1).flatten(1)


def test_a_global_average_pool_keeps_the_image_size_symbolic() -> None:
    """A network's last pooling (adaptive to 1×1) is a mean over symbolic sizes: height and width stay size
    parameters and shrink in validation, only the channels (tied to the weight) are fixed."""
    problem, tr = _translate(_ConvPool(), torch.randn(2, 3, 12, 10))
    assert tr.params == {"BATCH": 2, "X_2": 12, "X_3": 10}  # forward(x): x axes 2 and 3
    assert tr.fixed_dims == ["x dim 1 (3): tied to the fixed-size weight conv.weight [4, 3, 3, 3]"]
    sizes = small_sizes(tr.module, 3, minimum=tr.param_min)
    report = validate_sized(tr.module, lambda sz: reference_runner(problem, tr, 0, sz), sizes)
    assert report.ok and report.sizes == {"BATCH": 2, "X_2": 3, "X_3": 3}  # at most 3, never above the full size


def test_a_dim_export_refuses_is_fixed_with_solars_words_not_exports_text() -> None:
    """Export's message quotes guards and internal symbols; the header names the program's line and the kind
    of error instead."""
    from solar.frontends.export_dims import export_dynamic

    def export(spec: Any) -> Any:
        if spec and spec[0] and 1 in spec[0]:
            raise RuntimeError("Constraints violated (L['x'].size()[1])! s77 guard internals")
        return spec

    raise_line = export.__code__.co_firstlineno + 2
    spec, info = export_dynamic(export, [torch.ones(4, 6)], "all", ["x"])
    assert spec == ({0: torch.export.Dim.AUTO},)
    assert info.dropped == {(0, 1): f"export failed with it symbolic at test_frontend_dims.py:{raise_line} "
                                   "(RuntimeError)"}
