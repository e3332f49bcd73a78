"""Whole-graph reads of an argument by readers inside solar.for (backends/cost.py, `CostModel._over_runs`):
on random loops that slice a view of the argument at a moving offset (overlapping windows, disjoint ones,
the same slice again), through broadcasts and permutes before or inside the loop, the priced read is at
most the distinct source elements all iterations touch (brute force with NumPy index arrays), and equals it
where the chain repeats nothing and the iterations read the same or disjoint slices."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.backends.cost import CostModel
from solar.ir import parse_and_verify

F32 = 4


def _type(shape: tuple[int, ...]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>" if shape else "tensor<f32>"


def _view(draw: st.DrawFn, index: np.ndarray, name: str, tag: str, lines: list[str]) -> tuple[np.ndarray, str, bool]:
    """Maybe a permute or a broadcast of `name`: the new index array, value name and whether it repeats."""
    kind = draw(st.sampled_from(["none", "permute", "broadcast"]))
    if kind == "permute" and index.ndim > 1:
        perm = draw(st.permutations(range(index.ndim)))
        index = index.transpose(perm)
        lines.append(f"%{tag} = solar.permute {name} {{perm = [{', '.join(map(str, perm))}]}} : {_type(index.shape)}")
        return index, f"%{tag}", False
    if kind == "broadcast" and index.ndim < 3:
        where = draw(st.integers(0, index.ndim))
        copies = draw(st.integers(2, 3))
        dims = [d if d < where else d + 1 for d in range(index.ndim)]
        index = np.broadcast_to(np.expand_dims(index, where), (*index.shape[:where], copies, *index.shape[where:]))
        lines.append(f"%{tag} = solar.broadcast {name} {{dims = [{', '.join(map(str, dims))}]}} : "
                     f"{_type(index.shape)}")
        return index, f"%{tag}", True
    return index, name, False


@st.composite
def loops(draw: st.DrawFn) -> tuple[str, int, int, bool]:
    """IR text of a loop that copies a moving slice of a view of %x, the result's bytes, the distinct
    source bytes all iterations read, and whether the priced figure must equal them."""
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=2)))
    index = np.arange(int(np.prod(shape))).reshape(shape)
    outside: list[str] = []
    inside: list[str] = []
    index, name, repeats = _view(draw, index, "%x", "o", outside)
    index, name, again = _view(draw, index, name, "i", inside)
    repeats = repeats or again
    trips = draw(st.integers(1, 4))
    size = index.shape[0]
    # Step 1 only: the verifier cannot fold `(%t * c + a + n - (%t * c + a)) ceildiv 2` to a size.
    width = draw(st.integers(1, size))
    single = draw(st.booleans())
    span = 1 if single else width
    shift = draw(st.integers(0, (size - span) // (trips - 1) if trips > 1 else 3))
    start = draw(st.integers(0, size - span - shift * (trips - 1)))
    offset = f"%t * {shift} + {start}"
    rest = ", ".join(f"0:{n}" for n in index.shape[1:])
    touched: set[int] = set()
    for t in range(trips):
        lo = start + shift * t
        part = index[lo] if single else index[lo:lo + span]
        touched.update(np.unique(part).tolist())
    first = index[start] if single else index[start:start + span]
    head = offset if single else f"{offset}:{offset} + {span}"
    entries = ", ".join(filter(None, [head, rest]))
    inside.append(f"%s = solar.slice {name}[{entries}] : {_type(first.shape)}")
    letters = "abc"[:first.ndim]
    out = _type(first.shape)
    body = "\n      ".join(inside)
    pre = "\n    ".join(outside)
    text = f"""
solar.module @loop {{
  solar.func @f(%x: {_type(shape)}) -> ({out}) {{
    {pre}
    %z = solar.constant 0.0 : {out}
    %r = solar.for %t = 0 to {trips} iter_args(%a = %z) -> ({out}) {{
      {body}
      %y = solar.einsum @copy "{letters}->{letters}" (%s as A) -> (Y: {out}) {{
        Y = A
      }}
      solar.yield %y
    }}
    solar.return %r
  }}
}}
"""
    disjoint = shift >= span  # each iteration moves past the slice it took
    exact = not repeats and (shift == 0 or trips == 1 or disjoint)
    return text, first.size * F32, len(touched) * F32, exact


@settings(max_examples=80, deadline=None)
@given(loops())
def test_whole_graph_read_is_at_most_the_distinct_source_elements_of_all_iterations(
        case: tuple[str, int, int, bool]) -> None:
    text, written, touched, exact = case
    read = CostModel(parse_and_verify(text)).whole_graph().bytes - written
    assert 0 <= read <= touched, text
    if exact:
        assert read == touched, text


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.integers(0, 4), st.integers(1, 4), st.integers(0, 3))
def test_a_kernel_in_a_loop_is_priced_at_the_union_of_its_iterations(trips: int, shift: int, width: int,
                                                                      start: int) -> None:
    # X[%t * shift + start + %i] for i < width: windows that overlap (shift < width), touch or leave gaps.
    size = start + shift * (trips - 1) + width
    text = f"""
solar.module @m {{
  solar.func @f(%x: tensor<{size}xf32>) -> (tensor<{width}xf32>) {{
    %z = solar.constant 0.0 : tensor<{width}xf32>
    %r = solar.for %t = 0 to {trips} iter_args(%a = %z) -> (tensor<{width}xf32>) {{
      %y = solar.kernel @k(%x as X) -> (Y: tensor<{width}xf32>) {{
        affine.for %i = 0 to {width} {{
          Y[%i] = X[%t * {shift} + {start} + %i]
        }}
      }}
      solar.yield %y
    }}
    solar.return %r
  }}
}}
"""
    touched = len({start + shift * t + i for t in range(trips) for i in range(width)}) * F32
    assert CostModel(parse_and_verify(text)).whole_graph().bytes - width * F32 == touched


def test_overlapping_windows_of_a_broadcast_are_not_counted_at_every_iteration() -> None:
    # x[2, 16] shown twice per row as [4, 16]; 8 iterations read columns t..t+3 of all 4 rows: 2 · 11
    # distinct source elements (88 B). One iteration's 64 B of the view over 2 copies is 32 B; the 8
    # iterations' 256 B priced as before would have been capped at the source's 128 B, above the 88 B.
    text = """
solar.module @m {
  solar.func @f(%x: tensor<2x16xf32>) -> (tensor<4x4xf32>) {
    %b = solar.broadcast %x {dims = [0, 2]} : tensor<2x2x16xf32>
    %bb = solar.reshape %b : tensor<4x16xf32>
    %z = solar.constant 0.0 : tensor<4x4xf32>
    %r = solar.for %t = 0 to 8 iter_args(%a = %z) -> (tensor<4x4xf32>) {
      %s = solar.slice %bb[0:4, %t:%t + 4] : tensor<4x4xf32>
      %y = solar.einsum @copy "hi->hi" (%s as A) -> (Y: tensor<4x4xf32>) {
        Y = A
      }
      solar.yield %y
    }
    solar.return %r
  }
}
"""
    assert CostModel(parse_and_verify(text)).whole_graph().bytes - 16 * F32 == 32


def test_a_slice_that_moves_by_its_width_is_read_at_every_iteration() -> None:
    # Rows 2t..2t+1 of x[8, 3] at t < 4: every row once, 96 B, as a recurrent step's x_t is.
    text = """
solar.module @m {
  solar.func @f(%x: tensor<8x3xf32>) -> (tensor<2x3xf32>) {
    %z = solar.constant 0.0 : tensor<2x3xf32>
    %r = solar.for %t = 0 to 4 iter_args(%a = %z) -> (tensor<2x3xf32>) {
      %s = solar.slice %x[%t * 2:%t * 2 + 2, 0:3] : tensor<2x3xf32>
      %y = solar.einsum @copy "ij->ij" (%s as A) -> (Y: tensor<2x3xf32>) {
        Y = A
      }
      solar.yield %y
    }
    solar.return %r
  }
}
"""
    assert CostModel(parse_and_verify(text)).whole_graph().bytes - 6 * F32 == 96
