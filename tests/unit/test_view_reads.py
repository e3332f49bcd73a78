"""Reads through chains of views (backends/cost.py, `CostModel._read_bytes`): on random small chains of
permutes, slices and broadcasts, the priced read of the source is at most the distinct source elements the
reader touches (brute force with NumPy index arrays), and equals it where no slice follows a broadcast (the
reader then takes every copy of the elements it reads)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.backends.cost import CostModel
from solar.ir import parse_and_verify

F32 = 4
LETTERS = "abcdefgh"


def _type(shape: tuple[int, ...]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


@st.composite
def chains(draw: st.DrawFn) -> tuple[str, np.ndarray, bool]:
    """IR text of one chain read by a copy einsum, the source indices the reader sees, and whether the
    priced figure must be exact."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=2)))
    index = np.arange(int(np.prod(shape))).reshape(shape)
    lines, name, exact, broadcast_seen = [], "%x", True, False
    for step in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["permute", "slice", "broadcast"] if index.ndim < 4 else ["permute", "slice"]))
        if kind == "permute":
            perm = draw(st.permutations(range(index.ndim)))
            index = index.transpose(perm)
            attr = f"{{perm = [{', '.join(map(str, perm))}]}}"
            lines.append(f"%v{step} = solar.permute {name} {attr} : {_type(index.shape)}")
        elif kind == "slice":
            bounds = []
            for size in index.shape:
                start = draw(st.integers(0, size - 1))
                stop = draw(st.integers(start + 1, size))
                stride = draw(st.integers(1, 2))
                bounds.append((start, stop, stride))
            index = index[tuple(slice(*b) for b in bounds)]
            text = ", ".join(f"{a}:{b}" + (f":{s}" if s > 1 else "") for a, b, s in bounds)
            lines.append(f"%v{step} = solar.slice {name}[{text}] : {_type(index.shape)}")
            exact = exact and not broadcast_seen  # a slice of copies may keep fewer copies of some elements
        else:
            where = draw(st.integers(0, index.ndim))
            copies = draw(st.integers(2, 3))
            dims = [d if d < where else d + 1 for d in range(index.ndim)]
            index = np.broadcast_to(np.expand_dims(index, where),
                                    (*index.shape[:where], copies, *index.shape[where:]))
            lines.append(f"%v{step} = solar.broadcast {name} {{dims = [{', '.join(map(str, dims))}]}} "
                         f": {_type(index.shape)}")
            broadcast_seen = True
        name = f"%v{step}"
    subscripts = LETTERS[:index.ndim]
    out = _type(index.shape)
    body = "\n    ".join(lines)
    text = f"""
solar.module @chain {{
  solar.func @f(%x: {_type(shape)}) -> ({out}) {{
    {body}
    %y = solar.einsum @copy "{subscripts}->{subscripts}" ({name} as A) -> (Y: {out}) {{
      Y = A
    }}
    solar.return %y
  }}
}}
"""
    return text, index, exact


@settings(max_examples=60, deadline=None)
@given(chains())
def test_priced_read_is_at_most_the_distinct_source_elements(chain: tuple[str, np.ndarray, bool]) -> None:
    text, index, exact = chain
    model = CostModel(parse_and_verify(text))
    [unit] = model.units
    read = unit.bytes - index.size * F32  # the copy writes its whole result
    touched = len(np.unique(index)) * F32
    assert 0 <= read <= touched, text
    if exact:
        assert read == touched, text


def test_a_slice_of_a_broadcast_stays_below_the_elements_it_touches():
    # x[4] shown 3 times as [3, 4], then rows 0..1 and columns 1..2: 4 view elements of 2 distinct source
    # elements; the 16 B footprint over the 3 copies is 16 // 3 = 5 B, below the 8 B touched.
    text = """
solar.module @m {
  solar.func @f(%x: tensor<4xf32>) -> (tensor<2x2xf32>) {
    %b = solar.broadcast %x {dims = [1]} : tensor<3x4xf32>
    %s = solar.slice %b[0:2, 1:3] : tensor<2x2xf32>
    %y = solar.einsum @copy "ij->ij" (%s as A) -> (Y: tensor<2x2xf32>) {
      Y = A
    }
    solar.return %y
  }
}
"""
    [unit] = CostModel(parse_and_verify(text)).units
    assert unit.bytes - 4 * F32 == 5
