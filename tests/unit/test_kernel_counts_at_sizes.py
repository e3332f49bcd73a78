"""A loop nest's counts at given sizes (the parameters fixed before barvinok counts) are the points a
brute-force walk of the nest finds, and the same as the symbolic count evaluated there."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from solar.ir.analysis.counts import kernel_counts
from solar.ir.analysis.formula import symbols
from solar.ir.analysis.isl_model import build_model
from solar.ir.ops import KernelOp
from solar.ir.parser import parse_module

# A padded, strided window over a map of (N + S - 1) floordiv S elements (a convolution's guard).
_TEXT = """solar.module @m [N = 10] {{
solar.func @f(%x: tensor<{map}xf32>, %w: tensor<3xf32>) -> (tensor<{map}xf32>) {{
  %y = solar.kernel @k(%x as X, %w as W) -> (Y: tensor<{map}xf32>) {{
    affine.for %p = 0 to (N + {s} - 1) floordiv {s} {{
      affine.for %r = 0 to 3 {{
        affine.if %p + %r - {pad} >= 0 and %p + %r - {pad} < (N + {s} - 1) floordiv {s} {{
          Y[%p] += X[%p + %r - {pad}] * W[%r]
        }}
      }}
    }}
  }}
  solar.return %y
}}
}}
"""


@settings(max_examples=40)
@given(st.integers(1, 60), st.integers(1, 4), st.integers(0, 2))
def test_counts_at_sizes_are_the_points_of_the_nest(n: int, stride: int, pad: int) -> None:
    module = parse_module(_TEXT.format(s=stride, pad=pad, map=f"((N + {stride} - 1) floordiv {stride})"), "window.sir")
    kernel = next(op for op in module.walk() if isinstance(op, KernelOp))
    model = build_model(kernel, ["N"], {})
    size = (n + stride - 1) // stride
    points = [(p, r) for p in range(size) for r in range(3) if 0 <= p + r - pad < size]
    counts = kernel_counts(model, {"N": n})
    assert counts.points == len(points)
    assert counts.elements_read == {"X": len({p + r - pad for p, r in points}), "W": len({r for _, r in points})}
    assert counts.output_elements == {"Y": len({p for p, _ in points})}
    symbolic = kernel_counts(model, symbols(["N"]))
    assert symbolic.points.evaluate({"N": n}) == len(points)
