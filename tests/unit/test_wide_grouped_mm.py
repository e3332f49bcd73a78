"""The float64 grouped product of validation's wide reference run (frontends/wide_grouped_mm.py): the same
products as torch's `_grouped_mm`, in float64, and only inside the reference run."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.frontends.wide_grouped_mm import float64_grouped_mm, grouped_mm_float64

pytestmark = pytest.mark.skipif(not hasattr(torch.nn.functional, "grouped_mm"), reason="torch has no grouped_mm")


@settings(max_examples=40)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=5), st.integers(0, 3), st.integers(1, 3), st.integers(1, 3),
       st.booleans(), st.integers(0, 2**31 - 1))
def test_float64_groups_are_torchs_groups(sizes: list[int], past: int, k4: int, n4: int, bias: bool,
                                          seed: int) -> None:
    """Rows offs[g-1] .. offs[g] through weight g, empty groups included; rows past the last offset are
    zero. Widths are multiples of 4: torch's kernel wants 16-byte strides."""
    g = torch.Generator().manual_seed(seed)
    rows, k, n = sum(sizes) + past, 4 * k4, 4 * n4
    a = torch.randn(rows, k, generator=g)
    b = torch.randn(len(sizes), k, n, generator=g)
    offs = torch.tensor(sizes, dtype=torch.int32).cumsum(0, dtype=torch.int32)
    c = torch.randn(len(sizes), n, generator=g) if bias else None
    wide = grouped_mm_float64(a.double(), b.double(), offs, None if c is None else c.double())
    expected = torch.zeros(rows, n, dtype=torch.float64)
    start = 0
    for group, end in enumerate(offs.tolist()):
        expected[start:end] = a[start:end].double() @ b[group].double() + (0 if c is None else c[group].double())
        start = end
    assert torch.equal(wide, expected)
    torch_rows = torch.nn.functional.grouped_mm(a, b, offs=offs)[: int(offs[-1])]
    plain = grouped_mm_float64(a.double(), b.double(), offs)[: int(offs[-1])]
    torch.testing.assert_close(torch_rows.double(), plain, rtol=1e-5, atol=1e-5)


def test_float64_only_inside_the_reference_run() -> None:
    a, b = torch.randn(6, 8, dtype=torch.float64), torch.randn(2, 8, 4, dtype=torch.float64)
    offs = torch.tensor([2, 6], dtype=torch.int32)
    kernel = torch.nn.functional.grouped_mm
    with pytest.raises(RuntimeError, match="Double"):
        kernel(a, b, offs=offs)
    with float64_grouped_mm():
        out = torch.nn.functional.grouped_mm(a, b, offs=offs)
        assert torch.equal(out, torch._grouped_mm(a, b, offs=offs))
        # float32 still goes to torch's own kernel
        same = torch.nn.functional.grouped_mm(a.float(), b.float(), offs=offs)
    assert torch.nn.functional.grouped_mm is kernel
    assert torch.equal(out[:2], a[:2] @ b[0]) and torch.equal(out[2:], a[2:] @ b[1])
    torch.testing.assert_close(same, kernel(a.float(), b.float(), offs=offs))
