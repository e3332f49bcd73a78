"""Selection lowered as loop nests: topk for small k (PyTorch and JAX), cummax/cummin with indices."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")

from solar.frontends.diagnostics import TranslationError  # noqa: E402
from solar.frontends.jax_export import jax_reference, translate_jax  # noqa: E402
from solar.frontends.torch_export import callable_problem, reference_runner, translate_problem  # noqa: E402
from solar.frontends.validate import small_sizes, validate, validate_sized  # noqa: E402


def _torch_ok(fn, *inputs) -> None:  # type: ignore[no-untyped-def]
    problem = callable_problem(fn, list(inputs), "sel")
    tr = translate_problem(problem)
    report = validate_sized(tr.module, lambda sz: reference_runner(problem, tr, 0, sz), small_sizes(tr.module))
    assert report.ok, report.summary()


@pytest.mark.parametrize("largest", [True, False])
def test_topk_values_and_indices(largest: bool) -> None:
    _torch_ok(lambda x: torch.topk(x, 3, dim=0, largest=largest), torch.randn(6, 5))
    _torch_ok(lambda x: torch.topk(x, 2, dim=-1, largest=largest), torch.randn(2, 4, 8))


def test_cummax_cummin_take_the_latest_of_equal_elements() -> None:
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0, 5.0], [0.0, 0.0, 0.0, 1.0, 1.0]])
    _torch_ok(lambda v: torch.cummax(v, dim=1), x)
    _torch_ok(lambda v: torch.cummin(v, dim=1), -x)


def test_jax_top_k_with_int32_indices() -> None:
    def f(x):  # type: ignore[no-untyped-def]
        return jax.lax.top_k(x, 3)

    x = jax.numpy.asarray(np.random.default_rng(0).standard_normal((4, 7)), jax.numpy.float32)
    tr = translate_jax(f, [x], "topk")
    assert validate(tr.module, jax_reference(f, [x], tr), {}).ok


def test_large_k_is_reported_not_lowered() -> None:
    with pytest.raises(TranslationError, match=r"topk with k = 9 \(selection passes are lowered for k ≤ 8\)"):
        translate_problem(callable_problem(lambda x: torch.topk(x, 9), [torch.randn(2, 16)], "big_k"))
