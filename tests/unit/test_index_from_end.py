"""A constant index with negative entries counts from the end, as in Python (Falcon's fused query, key and
value heads: `qkv[..., [-2], :]` the keys, `qkv[..., [-1], :]` the values), validated against torch."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from solar.frontends.torch_export import callable_problem, reference_runner, translate_problem  # noqa: E402
from solar.frontends.validate import small_sizes, validate_sized  # noqa: E402
from solar.ir.ops import ConstantOp, GatherOp  # noqa: E402


def test_negative_constant_index_counts_from_the_end() -> None:
    def split_heads(qkv: torch.Tensor) -> torch.Tensor:
        queries, keys, values = qkv[:, :, :-2], qkv[:, :, [-2]], qkv[:, :, [-1]]
        return queries * keys + values

    problem = callable_problem(split_heads, [torch.randn(2, 5, 7, 4)], "heads")
    tr = translate_problem(problem)
    report = validate_sized(tr.module, lambda sz: reference_runner(problem, tr, 0, sz), small_sizes(tr.module))
    assert report.ok, report.summary()
    indices = [op.args[1].owner.value for op in tr.module.entry.walk()
               if isinstance(op, GatherOp) and isinstance(op.args[1].owner, ConstantOp)]
    assert sorted(indices) == [[5], [6]]  # of the 7 heads: the sixth and the seventh
