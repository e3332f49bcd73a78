"""Ops the LLM steps export that are lowered without decomposition (functionalizing a full-size model costs
as much as exporting it): an in-place binary op on a fresh tensor, `repeat_interleave` by a constant,
`a & b` of masks, a `x[-k:]` slice of a dimension shorter than k, and `max(P - k, 0)` sizes that a guard
decides (frontends/torch_lowering.py, frontends/torch_symbols.py)."""

from __future__ import annotations

import pytest
import torch

from solar.frontends.torch_export import callable_problem, reference_runner, translate_problem
from solar.frontends.validate import small_sizes, validate_sized


def _validated(fn, inputs, dynamic: str = "none"):
    problem = callable_problem(fn, inputs, "step")
    tr = translate_problem(problem, dynamic=dynamic)
    sizes = small_sizes(tr.module, 2, minimum=tr.param_min)
    report = validate_sized(tr.module, lambda sz: reference_runner(problem, tr, 0, sz), sizes)
    assert report.ok, report.summary()
    return tr


def test_routing_ops_lower_whole():
    def route(x: torch.Tensor, logits: torch.Tensor) -> tuple[torch.Tensor, ...]:
        weights, experts = torch.topk(logits.softmax(-1), 2, dim=-1)
        weights /= weights.sum(dim=-1, keepdim=True)  # div_ on topk's fresh values, read only after
        rows = x.repeat_interleave(2, dim=0)
        both = (logits > 0) & (logits < 1)
        return weights, experts, rows * 2.0, both, logits.repeat_interleave(3)

    tr = _validated(route, [torch.randn(5, 4), torch.randn(5, 6)])
    assert not tr.decomposed


def test_in_place_op_read_before_is_functionalized():
    def step(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = x * 2.0
        z = y.view(-1)
        y.mul_(3.0)  # `z`, a view of `y`, sees the update: not a fresh-tensor case, so decomposed
        return y, z + 1.0

    tr = _validated(step, [torch.randn(3, 4)])
    assert tr.decomposed


@pytest.mark.parametrize("length", [6, 20])
def test_window_slice_and_guarded_max(length):
    def window(cache: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        kept = cache[:, -9:]  # the whole cache when it is shorter than 9
        offset = max(cache.shape[1] - 9, 0)  # decided by the branch below, taken at export
        start = torch.arange(offset, offset + 1)
        return (kept * 2.0, start) if cache.shape[1] >= 9 else (kept + 1.0, start)

    tr = _validated(window, [torch.randn(2, length)], dynamic="all")
    assert (tr.param_min["DIM1"] >= 9) == (length >= 9)  # the guard: the IR holds on that side only
