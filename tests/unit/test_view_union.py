"""A unit reading several views of one tensor (backends/cost.py `CostModel.work`, backends/view_union.py):
the elements the views share are read once. On random sets of slices (and permutes of slices) of one base
read by one einsum, the priced bytes are at most the distinct elements they cover (brute force with NumPy
index sets) plus the writes, and equal to them when every view is a slice read in full."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.backends.cost import CostModel
from solar.ir import parse_and_verify
from solar.ir.analysis.formula import symbols

F32 = 4
LETTERS = "abcdefghijklmnop"


def _type(shape: tuple[int, ...]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>" if shape else "tensor<f32>"


@st.composite
def slice_sets(draw: st.DrawFn) -> tuple[str, set[int], bool]:
    """IR text of one einsum summing the products of 2-4 views of %x, the base elements they cover, and
    whether every view is a slice (the priced figure must then be exact)."""
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=2)))
    base = np.arange(int(np.prod(shape))).reshape(shape)
    lines: list[str] = []
    names: list[tuple[str, tuple[int, ...]]] = []
    covered: set[int] = set()
    only_slices = True
    for k in range(draw(st.integers(2, 4))):
        bounds = []
        for size in shape:
            start = draw(st.integers(0, size - 1))
            stop = draw(st.integers(start + 1, size))
            bounds.append((start, stop, draw(st.integers(1, 3))))
        view = base[tuple(slice(*b) for b in bounds)]
        covered |= set(view.ravel().tolist())
        text = ", ".join(f"{a}:{b}" + (f":{s}" if s > 1 else "") for a, b, s in bounds)
        lines.append(f"%s{k} = solar.slice %x[{text}] : {_type(view.shape)}")
        name = f"%s{k}"
        if view.ndim == 2 and draw(st.booleans()):
            # A permute of the slice: priced as the largest figure, a lower bound of the union.
            view = view.T
            lines.append(f"%p{k} = solar.permute %s{k} {{perm = [1, 0]}} : {_type(view.shape)}")
            name, only_slices = f"%p{k}", False
        names.append((name, view.shape))
    subs = [LETTERS[2 * k:2 * k + len(s)] for k, (_, s) in enumerate(names)]
    operands = ", ".join(f"{n} as {chr(65 + k)}" for k, (n, _) in enumerate(names))
    product = " * ".join(chr(65 + k) for k in range(len(names)))
    body = "\n    ".join(lines)
    text = f"""
solar.func @f(%x: {_type(shape)}) -> tensor<f32> {{
    {body}
    %y = solar.einsum @total "{','.join(subs)}->" ({operands}) -> (T: tensor<f32>) {{
      T += {product}
    }}
    solar.return %y
}}
"""
    return text, covered, only_slices


@settings(max_examples=80, deadline=None)
@given(slice_sets())
def test_priced_reads_are_at_most_the_distinct_elements(case: tuple[str, set[int], bool]) -> None:
    text, covered, exact = case
    model = CostModel(parse_and_verify(text))
    [unit] = model.units
    distinct = len(covered) * F32 + F32  # every covered element once, and the scalar result
    assert unit.bytes <= distinct
    if exact:
        assert unit.bytes == distinct
    [group] = model.groups
    assert group.bytes == unit.bytes
    whole = model.whole_graph()
    assert whole.bytes <= distinct
    if exact:
        assert whole.bytes == distinct


def _unit_bytes(text: str) -> tuple[int, int]:
    model = CostModel(parse_and_verify(text))
    [unit] = model.units
    return unit.bytes, model.whole_graph().bytes


def test_shifted_slices_read_the_base_once() -> None:
    # torch.diff: x[1:] - x[:-1] reads x's 1024 elements once (4096 B), writes 1023 (4092 B).
    assert _unit_bytes("""
solar.func @f(%x: tensor<1024xf32>) -> tensor<1023xf32> {
  %a = solar.slice %x[0:1023] : tensor<1023xf32>
  %b = solar.slice %x[1:1024] : tensor<1023xf32>
  %y = solar.einsum @diff "i,i->i" (%a as A, %b as B) -> (Y: tensor<1023xf32>) {
    Y = B - A
  }
  solar.return %y
}
""") == (8188, 8188)


def test_a_tensor_and_its_transpose_read_it_once() -> None:
    # x + x^T: the permute shows the same 16 elements; x is read once (64 B), the result written (64 B).
    assert _unit_bytes("""
solar.func @f(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %t = solar.permute %x {perm = [1, 0]} : tensor<4x4xf32>
  %y = solar.einsum @sym "ij,ij->ij" (%x as A, %t as B) -> (Y: tensor<4x4xf32>) {
    Y = A + B
  }
  solar.return %y
}
""") == (128, 128)


ROPE = """
solar.module @rope [H = 8] {
  solar.func @f(%x: tensor<8x(2 * H)xf32>) -> tensor<8xHxf32> {
    %a = solar.slice %x[0:8, 0:H] : tensor<8xHxf32>
    %b = solar.slice %x[0:8, H:2 * H] : tensor<8xHxf32>
    %y = solar.einsum @rot "ij,ij->ij" (%a as A, %b as B) -> (Y: tensor<8xHxf32>) {
      Y = A - B
    }
    solar.return %y
  }
}
"""


def test_disjoint_halves_sum_to_the_base() -> None:
    # rotate_half: x[..., :H] and x[..., H:] are disjoint, so together exactly x (8·16·4 = 512 B).
    assert _unit_bytes(ROPE) == (512 + 256, 512 + 256)


def test_disjoint_halves_with_symbolic_sizes() -> None:
    model = CostModel(parse_and_verify(ROPE), values=symbols(["H"]))
    [unit] = model.units
    assert [unit.bytes.evaluate({"H": h}) for h in (1, 8, 64)] == [8 * 3 * h * F32 for h in (1, 8, 64)]


def test_a_three_tap_stencil_reads_the_base_once() -> None:
    # y[i] = x[i] + x[i+1] + x[i+2] over N = 10: x's 10 elements once (40 B), 8 written (32 B); the three
    # slices' 96 B counted the shared elements two or three times.
    text = """
solar.module @stencil [N = 10] {
  solar.func @f(%x: tensor<Nxf32>) -> tensor<(N - 2)xf32> {
    %a = solar.slice %x[0:N - 2] : tensor<(N - 2)xf32>
    %b = solar.slice %x[1:N - 1] : tensor<(N - 2)xf32>
    %c = solar.slice %x[2:N] : tensor<(N - 2)xf32>
    %y = solar.einsum @tap3 "i,i,i->i" (%a as A, %b as B, %c as C) -> (Y: tensor<(N - 2)xf32>) {
      Y = A + B + C
    }
    solar.return %y
  }
}
"""
    assert _unit_bytes(text) == (72, 72)
    model = CostModel(parse_and_verify(text), values=symbols(["N"]))
    [unit] = model.units
    assert [unit.bytes.evaluate({"N": n}) for n in (3, 10, 1000)] == [16, 72, 4000 + 3992]


def _kernel_on_two_slices(size: int, second: str, out: int, body: str) -> str:
    """A kernel reading A = x[0:8] and B = x[`second`] of x[`size`] with `body`, writing Y[`out`]."""
    return f"""
solar.func @f(%x: tensor<{size}xf32>) -> tensor<{out}xf32> {{
  %a = solar.slice %x[0:8] : tensor<8xf32>
  %b = solar.slice %x[{second}] : tensor<8xf32>
  %y = solar.kernel @k(%a as A, %b as B) -> (Y: tensor<{out}xf32>) {{{body}
  }}
  solar.return %y
}}
"""


def test_a_partial_read_keeps_the_largest_figure() -> None:
    # The kernel reads 4 of a's 8 elements and all of b's: the union is not proven, the larger figure (b's
    # 32 B) is the lower bound (the run reads 12 distinct elements, 48 B), plus 16 B written.
    assert _unit_bytes(_kernel_on_two_slices(12, "4:12", 4, """
    affine.for %i = 0 to 4 {
      Y[%i] = A[%i] + B[%i] + B[%i + 4]
    }"""))[0] == 32 + 16


def _row_slices_in_a_loop(second: str) -> CostModel:
    """Each iteration t of a solar.for reads x[t, 0:8] and x[t, `second`] in one einsum."""
    return CostModel(parse_and_verify(f"""
solar.func @f(%x: tensor<8x16xf32>) -> tensor<8xf32> {{
  %z = solar.constant 0.0 : tensor<8xf32>
  %r = solar.for %t = 0 to 8 iter_args(%acc = %z) -> (tensor<8xf32>) {{
    %a = solar.slice %x[%t, 0:8] : tensor<8xf32>
    %b = solar.slice %x[%t, {second}] : tensor<8xf32>
    %y = solar.einsum @d "i,i->i" (%a as A, %b as B) -> (Y: tensor<8xf32>) {{
      Y = A - B
    }}
    solar.yield %y
  }}
  solar.return %r
}}
"""))


def test_disjoint_halves_moving_with_a_loop_sum() -> None:
    # Each iteration reads row t of x in two halves (disjoint at every t): 64 B a run, 8 runs.
    [unit] = _row_slices_in_a_loop("8:16").units
    assert (unit.bytes, unit.trips) == (64 + 32, 8)


def test_overlapping_slices_moving_with_a_loop_keep_the_largest() -> None:
    # x[t, 0:8] and x[t, 4:12] overlap; the union at a loop-moving index is not counted: the larger figure.
    [unit] = _row_slices_in_a_loop("4:12").units
    assert unit.bytes == 32 + 32


def test_a_partial_read_takes_off_only_what_it_misses() -> None:
    # Disjoint halves of x[16]; the kernel reads 7 of a's 8 elements and all of b's: the union's 64 B less
    # the 4 B a's reader misses, 60 B (the 15 elements it reads), above the larger figure (32 B).
    assert _unit_bytes(_kernel_on_two_slices(16, "8:16", 8, """
    affine.for %i = 0 to 7 {
      Y[%i] = A[%i] + B[%i]
    }
    Y[7] = B[7]"""))[0] == 60 + 32


def test_the_whole_graph_reads_slices_of_an_argument_in_separate_units_once() -> None:
    # Two units read x[0:8] and x[4:12] of x[12]: each unit 32 B, the whole graph x's 12 elements (48 B)
    # where the larger slice (32 B) was its figure; plus both 32 B results.
    model = CostModel(parse_and_verify("""
solar.func @f(%x: tensor<12xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %a = solar.slice %x[0:8] : tensor<8xf32>
  %b = solar.slice %x[4:12] : tensor<8xf32>
  %y = solar.einsum @ya "i->i" (%a as A) -> (Y: tensor<8xf32>) {
    Y = A * 2.0
  }
  %z = solar.einsum @zb "i->i" (%b as B) -> (Z: tensor<8xf32>) {
    Z = B * 3.0
  }
  solar.return %y, %z
}
"""))
    assert [u.bytes for u in model.units] == [64, 64]
    assert model.whole_graph().bytes == 48 + 64


MLA_HALVES = """
solar.func @f(%w: tensor<16x8xf32>, %q: tensor<2x4xf32>, %a: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x4xf32>) {
  %p = solar.reshape %w : tensor<2x8x8xf32>
  %uk = solar.slice %p[0:2, 0:4, 0:8] : tensor<2x4x8xf32>
  %uv = solar.slice %p[0:2, 4:8, 0:8] : tensor<2x4x8xf32>
  %ql = solar.einsum @ql "hd,hdr->hr" (%q as Q, %uk as K) -> (L: tensor<2x8xf32>) {
    L += Q * K
  }
  %o = solar.einsum @o "hr,hdr->hd" (%a as A, %uv as V) -> (O: tensor<2x4xf32>) {
    O += A * V
  }
  solar.return %ql, %o
}
"""


def test_slices_of_a_reshaped_weight_read_it_whole() -> None:
    """MLA's W_UK and W_UV: kv_b_proj's weight viewed per head and sliced in two, each half read by its own
    einsum. The whole graph reads the weight once and whole (512 B), not its larger half (256 B)."""
    model = CostModel(parse_and_verify(MLA_HALVES))
    assert [u.bytes for u in model.units] == [32 + 256 + 64, 64 + 256 + 32]
    assert model.whole_graph().bytes == 512 + 32 + 64 + 64 + 32


def test_query_key_value_slices_of_a_permuted_projection() -> None:
    """qkv.reshape(S, 3, H, D).permute(1, 0, 2, 3)[0], [1], [2]: the three slices of the permuted view cover
    the projection, which the whole graph reads once (3·16·8·4 = 1,536 B)."""
    model = CostModel(parse_and_verify("""
solar.func @f(%qkv: tensor<16x24xf32>) -> (tensor<2x16x16xf32>, tensor<2x16x4xf32>) {
  %r = solar.reshape %qkv : tensor<16x3x2x4xf32>
  %p = solar.permute %r {perm = [1, 2, 0, 3]} : tensor<3x2x16x4xf32>
  %q = solar.slice %p[0, 0:2, 0:16, 0:4] : tensor<2x16x4xf32>
  %k = solar.slice %p[1, 0:2, 0:16, 0:4] : tensor<2x16x4xf32>
  %v = solar.slice %p[2, 0:2, 0:16, 0:4] : tensor<2x16x4xf32>
  %s = solar.einsum @scores "hid,hjd->hij" (%q as Q, %k as K) -> (S: tensor<2x16x16xf32>) {
    S += Q * K
  }
  %c = solar.einsum @copy "hid->hid" (%v as V) -> (C: tensor<2x16x4xf32>) {
    C = V
  }
  solar.return %s, %c
}
"""))
    assert model.whole_graph().bytes == 16 * 24 * F32 + 2 * 16 * 16 * F32 + 2 * 16 * 4 * F32
