"""Counts at fixed sizes without ISL (separable_counts): the same numbers barvinok gives where the loops come
apart into independent groups, and no answer (None, ISL counts) where they do not."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from solar.ir.analysis.isl_model import KernelModel, build_model, count
from solar.ir.analysis.separable_counts import SeparableCounts
from solar.ir.ops import KernelOp
from solar.ir.parser import parse_module

# A strided, padded 2-D window over an H x W map with C channels: groups {c}, {p, r}, {q, s}.
_CONV = """solar.module @m [H = 9, W = 7] {{
solar.func @f(%x: tensor<{c}xHxWxf32>, %w: tensor<{c}x3x3xf32>)
    -> (tensor<((H + {s} - 1) floordiv {s})x((W + 1) floordiv 2)xf32>) {{
  %y = solar.kernel @k(%x as X, %w as K) -> (Y: tensor<((H + {s} - 1) floordiv {s})x((W + 1) floordiv 2)xf32>) {{
    affine.for %p = 0 to (H + {s} - 1) floordiv {s} {{
      affine.for %q = 0 to (W + 1) floordiv 2 {{
        affine.for %c = 0 to {c} {{
          affine.for %r = 0 to 3 {{
            affine.for %t = 0 to 3 {{
              affine.if {s} * %p + %r - {pad} >= 0 and {s} * %p + %r - {pad} < H
                  and 2 * %q + %t - 1 >= 0 and 2 * %q + %t - 1 < W {{
                Y[%p, %q] += X[%c, {s} * %p + %r - {pad}, 2 * %q + %t - 1] * K[%c, %r, %t]
              }}
            }}
          }}
        }}
      }}
    }}
  }}
  solar.return %y
}}
}}
"""


def _model(text: str, params: list[str]) -> KernelModel:
    kernel = next(op for op in parse_module(text, "k.sir").walk() if isinstance(op, KernelOp))
    return build_model(kernel, params, {})


def _isl(model: KernelModel, values: dict[str, int]) -> tuple[int | None, dict[str, int | None]]:
    points = count(model.statements[0].domain, values)
    touched = {name: count(model.footprint(name, written=name == "Y"), values) for name in ("X", "K", "Y")}
    return points, touched


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 12), st.integers(1, 9), st.integers(1, 5), st.integers(1, 3), st.integers(0, 2))
def test_a_padded_window_counts_as_isl_counts_it(h: int, w: int, c: int, stride: int, pad: int) -> None:
    model = _model(_CONV.format(c=c, s=stride, pad=pad), ["H", "W"])
    values = {"H": h, "W": w}
    separable = SeparableCounts(model, values)
    points, touched = _isl(model, values)
    assert separable.points(model.statements[0]) == points
    assert {name: separable.footprint(name, written=name == "Y") for name in ("X", "K", "Y")} == touched


def test_the_numbers_of_one_window() -> None:
    model = _model(_CONV.format(c=4, s=1, pad=1), ["H", "W"])
    separable = SeparableCounts(model, {"H": 9, "W": 7})
    # rows: 9 outputs x 3 taps less the 2 that fall off the ends; columns (stride 2): 4 x 3 less 2.
    assert separable.points(model.statements[0]) == 4 * (9 * 3 - 2) * (4 * 3 - 2)
    assert separable.footprint("X") == 4 * 9 * 7
    assert separable.footprint("K") == 4 * 3 * 3
    assert separable.footprint("Y", written=True) == 9 * 4


_COUPLED = """solar.module @m [N = 6] {
solar.func @f(%x: tensor<NxNxf32>) -> (tensor<2xNxf32>) {
  %y = solar.kernel @k(%x as X) -> (Y: tensor<2xNxf32>) {
    affine.for %i = 0 to N {
      affine.for %j = 0 to N {
        Y[0, %i] += X[%i, %j] * X[%j, %i]
        Y[1, %i + %j - %j] += X[%i, %j]
      }
    }
  }
  solar.return %y
}
}
"""


def test_what_it_leaves_to_isl() -> None:
    model = _model(_COUPLED, ["N"])
    separable = SeparableCounts(model, {"N": 6})
    assert separable.points(model.statements[0]) == 36  # two independent loops
    assert separable.footprint("X") is None  # read by three accesses: their union is ISL's
    assert separable.footprint("Y", written=True) is None  # written by two statements
    assert SeparableCounts(model, {"N": 0}).points(model.statements[0]) is None  # N = 0 is outside the context


_TRIANGLE = """solar.module @m [N = 400] {
solar.func @f(%x: tensor<Nxf32>) -> (tensor<Nxf32>) {
  %y = solar.kernel @k(%x as X) -> (Y: tensor<Nxf32>) {
    affine.for %i = 0 to N {
      affine.for %j = 0 to %i + 1 {
        Y[%i] += X[%i - %j]
      }
    }
  }
  solar.return %y
}
}
"""


def test_a_triangle_is_enumerated_up_to_the_limit() -> None:
    model = _model(_TRIANGLE, ["N"])
    assert SeparableCounts(model, {"N": 40}).points(model.statements[0]) == 40 * 41 // 2
    assert SeparableCounts(model, {"N": 40}).footprint("X") == 40
    assert SeparableCounts(model, {"N": 400}).points(model.statements[0]) is None  # 80,000 points: ISL's
