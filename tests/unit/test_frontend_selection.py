"""Sorting and selection lowered to the data-dependent ops (PyTorch and JAX), validated against the
framework, and priced by their comparison lower bounds as their own units."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")

from solar.backends.cost import CostModel  # noqa: E402
from solar.frontends.diagnostics import TranslationError  # noqa: E402
from solar.frontends.jax_export import jax_reference, translate_jax  # noqa: E402
from solar.frontends.torch_export import callable_problem, reference_runner, translate_problem  # noqa: E402
from solar.frontends.validate import small_sizes, validate, validate_sized  # noqa: E402
from solar.ir.analysis.selection_counts import ceil_log2_factorial  # noqa: E402
from solar.ir.ops import (  # noqa: E402
    KernelOp,
    ModuleOp,
    SelectionOp,
)
from solar.ir.printer import print_module  # noqa: E402

jnp = jax.numpy


def _torch(fn, *inputs) -> ModuleOp:  # type: ignore[no-untyped-def]
    problem = callable_problem(fn, list(inputs), "sel")
    tr = translate_problem(problem)
    report = validate_sized(tr.module, lambda sz: reference_runner(problem, tr, 0, sz), small_sizes(tr.module))
    assert report.ok, report.summary()
    return tr.module


def _jax(fn, x) -> ModuleOp:  # type: ignore[no-untyped-def]
    tr = translate_jax(fn, [x], "sel")
    report = validate(tr.module, jax_reference(fn, [x], tr), {})
    assert report.ok, report.summary()
    return tr.module


def _ops(module: ModuleOp) -> list[str]:
    assert module.entry is not None
    return [op.opname for op in module.entry.walk() if isinstance(op, SelectionOp)]


def _units(module: ModuleOp) -> dict[str, tuple[int, int]]:
    """(vector FLOPs, bytes) of each data-dependent unit, by kind."""
    return {w.kind: (sum(w.flops_vector.values()), w.bytes) for w in CostModel(module).units
            if w.kind not in ("kernel", "einsum")}


def test_log2_factorial_is_exact() -> None:
    assert [ceil_log2_factorial(n) for n in (1, 2, 3, 4, 5, 8, 16)] == [0, 1, 3, 5, 7, 16, 45]
    assert ceil_log2_factorial(5000) == int(np.ceil(sum(np.log2(np.arange(1, 5001, dtype=np.float64)))))


@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort(descending: bool) -> None:
    x = torch.randn(3, 8)
    m = _torch(lambda v: torch.sort(v, dim=1, descending=descending), x)
    assert _ops(m) == ["solar.sort"]
    # 3 lines of 8: ⌈log₂ 8!⌉ = 16 comparisons each; read 96 bytes, write values (96) and i64 indices (192).
    assert _units(m)["sort"] == (3 * 16, 96 + 96 + 192)
    m = _torch(lambda v: torch.argsort(v, dim=0, descending=descending), x)
    assert _ops(m) == ["solar.argsort"] and _units(m)["argsort"] == (8 * 3, 96 + 192)


@pytest.mark.parametrize("largest", [True, False])
def test_topk_any_k_priced_below_selection_passes(largest: bool) -> None:
    m = _torch(lambda v: torch.topk(v, 3, dim=0, largest=largest), torch.randn(6, 5))
    # 5 lines of 6, k = 3: (6 − 3) + ⌈log₂ 3!⌉ = 6 comparisons each.
    assert _units(m)["topk"] == (5 * 6, 120 + 5 * 3 * (4 + 8))
    m = _torch(lambda v: torch.topk(v, 12, dim=-1), torch.randn(2, 4, 32))  # k beyond the old limit of 8
    assert _ops(m) == ["solar.topk"] and not any(isinstance(op, KernelOp) for op in m.entry.walk())
    assert _units(m)["topk"][0] == 8 * ((32 - 12) + ceil_log2_factorial(12))


def test_kthvalue_and_median() -> None:
    x = torch.randn(4, 7)
    m = _torch(lambda v: torch.kthvalue(v, 2, dim=1, keepdim=True), x)
    assert _units(m)["kthvalue"][0] == 4 * (7 - 1 + min(2 - 1, 7 - 2))
    m = _torch(lambda v: torch.median(v, dim=0), x)
    assert _units(m)["kthvalue"][0] == 7 * (4 - 1 + min(2 - 1, 4 - 2))  # the lower median of 4: the 2nd
    m = _torch(lambda v: torch.median(v), x)  # of all 28 elements: the 14th
    assert _units(m)["kthvalue"][0] == 28 - 1 + 13


def test_cummax_cummin_take_the_latest_of_equal_elements() -> None:
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0, 5.0], [0.0, 0.0, 0.0, 1.0, 1.0]])
    m = _torch(lambda v: torch.cummax(v, dim=1), x)
    assert _units(m)["cummax"] == (2 * 4, 40 + 40 + 80)
    _torch(lambda v: torch.cummin(v, dim=1), -x)


def test_nonzero_masked_select_and_boolean_mask_are_padded_with_a_count() -> None:
    x = torch.randn(3, 8)
    m = _torch(lambda v: torch.nonzero(v > 0), x)
    assert m.attrs["bounded_outputs"] == [[0, 1]]
    assert "solar.nonzero %gt : (tensor<24x2xi64>, tensor<i64>)" in print_module(m)
    # One test per element; reads the mask (24 bytes), writes at least the count (the rows: 0 or more).
    assert _units(m)["nonzero"] == (24, 24 + 8)
    m = _torch(lambda v, k: torch.masked_select(v, k), x, torch.rand(1, 8) > 0.5)
    assert _ops(m) == ["solar.masked_select"]
    m = _torch(lambda v, k: v[k], torch.randn(3, 4, 5), torch.rand(3, 4) > 0.5)
    assert "solar.masked_select %args_0, %args_1 : (tensor<12x5xf32>, tensor<i64>)" in print_module(m)
    assert _units(m)["masked_select"] == (12, 12 + 8)


def test_computing_on_a_data_dependent_size_is_refused() -> None:
    with pytest.raises(TranslationError, match=r"aten.sum.default reads index, whose size depends on the data"):
        translate_problem(callable_problem(lambda v: v[v > 0].sum(), [torch.randn(3, 8)], "dd"))


def test_topk_sorted_false_prices_only_the_choice() -> None:
    """A router's `topk(sorted=False)` (DeepSeek's): any order is torch's, the sorted one among them; only
    choosing the k is priced: n − k comparisons per line, not n − k + ⌈log₂ k!⌉."""
    from solar.ir.analysis.selection_counts import selection_counts

    def picked(flag: bool) -> int:
        tr = translate_problem(callable_problem(lambda v: torch.topk(v, 4, sorted=flag).values.sum(-1),
                                                [torch.randn(2, 16)], "u"), "none")
        op = next(op for op in tr.module.entry.walk() if op.opname == "solar.topk")
        assert op.attrs.get("sorted", True) is flag
        return selection_counts(op, {}).comparisons

    assert picked(False) == 2 * (16 - 4) and picked(True) == 2 * (16 - 4 + 5)  # ⌈log₂ 4!⌉ = 5


X = jnp.asarray(np.random.default_rng(0).standard_normal((4, 7)), jnp.float32)


@pytest.mark.parametrize(("name", "fn", "ops"), [
    ("sort", lambda x: jnp.sort(x, axis=1), ["solar.sort"]),
    ("sort_desc", lambda x: jnp.sort(x, axis=0, descending=True), ["solar.sort"]),
    ("argsort", lambda x: jnp.argsort(x, axis=1), ["solar.sort"]),
    ("median", lambda x: jnp.median(x, axis=1), ["solar.sort"]),
    ("top_k", lambda x: jax.lax.top_k(x, 3), ["solar.topk"]),
    ("cummax", lambda x: jax.lax.cummax(x, axis=1), ["solar.cummax"]),
    ("cummin_rev", lambda x: jax.lax.cummin(x, axis=0, reverse=True), ["solar.cummin"]),
    ("sort_two", lambda x: jax.lax.sort((x, x * 2.0), dimension=1, num_keys=1), ["solar.sort"]),
])
def test_jax_forms(name: str, fn, ops: list[str]) -> None:  # type: ignore[no-untyped-def]
    assert _ops(_jax(fn, X)) == ops


def test_jax_argsort_returns_the_sorts_own_int32_indices() -> None:
    m = _jax(lambda x: jnp.argsort(x, axis=1), X)
    assert "solar.sort %arg0 {axis = 1, descending = false} : (tensor<4x7xf32>, tensor<4x7xi32>)" in print_module(m)
    assert "solar.gather" not in print_module(m)


def test_jax_nonzero_with_size_is_one_padded_op() -> None:
    m = _jax(lambda x: jnp.nonzero(x > 0.5, size=40, fill_value=-1), X)  # more rows than elements: padded
    text = print_module(m)
    assert "solar.nonzero %gt {pad = true, fill = -1} : (tensor<40x2xi32>, tensor<i64>)" in text
    assert "scatter" not in text and "bounded_outputs" not in m.attrs
    # One test per element; the padded rows are part of JAX's result, so all 40 rows are written (the count,
    # read by nothing, is not).
    assert _units(m)["nonzero"] == (28, 28 + 40 * 2 * 4)


def test_where_with_one_argument_is_nonzero_by_columns() -> None:
    m = _torch(lambda v: torch.where(v > 0), torch.randn(3, 8))
    assert _ops(m) == ["solar.nonzero"] and m.attrs["bounded_outputs"] == [[0, 2], [1, 3]]
