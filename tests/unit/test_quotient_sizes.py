"""A dynamic export whose sizes come to divide by a quotient of a quotient of sizes (BigBird's block-sparse
attention: the sequence padded to its block size, then viewed per block) is stopped at once, the dims
behind it go back to static together and the header says why; a failed export's dim markers do not leak
into the next one."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from solar.frontends.export_dims import QUOTIENT_REASON  # noqa: E402
from solar.frontends.quotient_sizes import QuotientDivisor, refuse_quotient_divisors  # noqa: E402
from solar.frontends.torch_export import callable_problem, translate_problem  # noqa: E402


class _Blocks(torch.nn.Module):
    """Pads the sequence to a multiple of 64, then views it as blocks and each block's rows by `-1` sizes:
    the second view's size is the padded length over its block count."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = x.shape[1]
        padded = s + (64 - s % 64) % 64
        y = torch.nn.functional.pad(x, (0, padded - s))
        blocks = y.view(x.shape[0], padded // 64, -1)
        return blocks.reshape(-1, padded // (padded // 64)) * 2.0


def test_a_block_count_divisor_stops_export_and_fixes_the_sequence_alone() -> None:
    tr = translate_problem(callable_problem(_Blocks(), [torch.randn(3, 100)], "blocks"), "all")
    assert tr.params == {"BATCH": 3}  # the batch stays symbolic: it only scales the divisor
    assert tr.fixed_dims == [f"x dim 1 (100): {QUOTIENT_REASON}"]
    assert tr.module.entry is not None
    assert [str(t) for t in tr.module.entry.result_types] == ["tensor<(2 * BATCH)x64xf32>"]


def test_a_failed_export_leaves_no_dim_marked_for_the_static_one() -> None:
    """torch.export marks the dims asked symbolic on the input and clears them only when it succeeds: with
    one row (no batch to keep), the static export after the stopped one must see static shapes (it kept the
    sequence symbolic, and the IR failed to verify, before export_dims cleared the markers)."""
    tr = translate_problem(callable_problem(_Blocks(), [torch.randn(1, 100)], "blocks"), "all")
    assert tr.params == {} and tr.fixed_dims == [f"x dim 1 (100): {QUOTIENT_REASON}"]
    assert tr.module.entry is not None
    assert [str(t) for t in tr.module.entry.result_types] == ["tensor<2x64xf32>"]


def test_the_refusal_names_the_dims_inside_the_quotient() -> None:
    x = torch.randn(2, 4095)
    with refuse_quotient_divisors(), pytest.raises(QuotientDivisor) as info:
        torch.export.export(_Blocks(), (x,), dynamic_shapes=({0: torch.export.Dim.AUTO, 1: torch.export.Dim.AUTO},))
    assert info.value.sources == ["L['x'].size()[1]"]


def test_sizes_that_only_divide_by_plain_quotients_still_export() -> None:
    """`h // (h // 4)`, met in the guards of cutting an image into patches, is no cause to stop: every
    dim stays symbolic."""
    with refuse_quotient_divisors():
        ep = torch.export.export(_Patches(), (torch.randn(2, 3, 8, 8),),
                                 dynamic_shapes=({d: torch.export.Dim.AUTO for d in range(4)},))
    shape = next(n.meta["val"].shape for n in ep.graph.nodes if n.op == "placeholder")
    assert all(isinstance(size, torch.SymInt) for size in shape)


class _Patches(torch.nn.Module):
    def forward(self, img: torch.Tensor) -> torch.Tensor:
        b, c, h, w = img.shape
        return img.reshape(b, c, h // 4, 4, w // 4, 4).permute(0, 2, 4, 1, 3, 5).reshape(b, -1, c * 16)


def test_torch_functions_are_restored_after_a_refusal() -> None:
    from torch.utils._sympy import functions

    before = {cls: cls.__dict__["eval"] for cls in (functions.FloorDiv, functions.Mod, functions.PythonMod)}
    with pytest.raises(QuotientDivisor), refuse_quotient_divisors():
        torch.export.export(_Blocks(), (torch.randn(2, 100),), dynamic_shapes=({1: torch.export.Dim.AUTO},))
    assert {cls: cls.__dict__["eval"] for cls in before} == before
