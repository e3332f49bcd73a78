"""Eager attention (a mask added to scores that separate kernels produce and consume): the mask's liveness
flows back into Q·Kᵀ and its scaling, and forward through the softmax into P·V, so each counts only the live
pairs, as SDPA does (solar.ir.analysis.mask_domains: OffValue, restrict_to_used_points)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.ops import EinsumOp
from solar.ir.parser import parse_module
from solar.ir.pass_manager import PassContext, PassManager
from solar.passes.lift_einsum import LiftEinsum

D = 4
LOWEST = -3.4028234663852886e+38  # HF's min_dtype for f32


def _eager(seq: int, live: str) -> str:
    """Q·Kᵀ, a scale, `+ where(live, 0, lowest)`, a softmax over the keys and P·V, each its own kernel."""
    t = f"tensor<{seq}x{D}xf32>"
    return f"""
solar.func @f(%q: {t}, %k: {t}, %v: {t}) -> {t} {{
  %pos = solar.kernel @pos() -> (Y: tensor<{seq}xi64>) {{ affine.for %i0 = 0 to {seq} {{ Y[%i0] = %i0 }} }}
  %zero = solar.constant 0.0 : tensor<f32>
  %mask = solar.kernel @mask(%pos as P, %zero as Z) -> (Y: tensor<{seq}x{seq}xf32>) {{
    affine.for %i = 0 to {seq} {{ affine.for %j = 0 to {seq} {{
      Y[%i, %j] = select({live}, Z[], {LOWEST})
    }} }}
  }}
  %s = solar.kernel @qk(%q as Q, %k as K) -> (Y: tensor<{seq}x{seq}xf32>) {{
    affine.for %i = 0 to {seq} {{ affine.for %j = 0 to {seq} {{ affine.for %d = 0 to {D} {{
      Y[%i, %j] += Q[%i, %d] * K[%j, %d]
    }} }} }}
  }}
  %scaled = solar.kernel @scale(%s as A) -> (Y: tensor<{seq}x{seq}xf32>) {{
    affine.for %i = 0 to {seq} {{ affine.for %j = 0 to {seq} {{ Y[%i, %j] = A[%i, %j] * 0.5 }} }}
  }}
  %masked = solar.kernel @add(%scaled as A, %mask as M) -> (Y: tensor<{seq}x{seq}xf32>) {{
    affine.for %i = 0 to {seq} {{ affine.for %j = 0 to {seq} {{ Y[%i, %j] = A[%i, %j] + M[%i, %j] }} }}
  }}
  %p = solar.kernel @softmax(%masked as X) -> (Y: tensor<{seq}x{seq}xf32>) {{
    local mx: tensor<{seq}xf32>
    local sum: tensor<{seq}xf32>
    affine.for %i = 0 to {seq} {{
      affine.for %r = 0 to {seq} {{ mx[%i] max= X[%i, %r] }}
      affine.for %r = 0 to {seq} {{ sum[%i] += exp(X[%i, %r] - mx[%i]) }}
      affine.for %r = 0 to {seq} {{ Y[%i, %r] = exp(X[%i, %r] - mx[%i]) / sum[%i] }}
    }}
  }}
  %o = solar.kernel @pv(%p as A, %v as V) -> (Y: tensor<{seq}x{D}xf32>) {{
    affine.for %i = 0 to {seq} {{ affine.for %e = 0 to {D} {{ affine.for %r = 0 to {seq} {{
      Y[%i, %e] += A[%i, %r] * V[%r, %e]
    }} }} }}
  }}
  solar.return %o
}}
"""


def _macs(text: str) -> dict[str, int]:
    engine = DiagnosticEngine()
    module = parse_module(text, "<test>", engine)
    module = PassManager([LiftEinsum()]).run(module, PassContext(engine, report=lambda _: None))
    assert not engine.has_errors, engine.format_all()
    out: dict[str, int] = {}
    for op in module.entry.walk():
        if isinstance(op, EinsumOp) and op.symbol in ("qk", "pv"):
            out[op.symbol] = op.attrs["counts"]["macs"]
    return out


@settings(max_examples=12, deadline=None)
@given(seq=st.integers(1, 24), window=st.integers(1, 30))
def test_eager_windowed_causal_counts_live_pairs_in_both_products(seq: int, window: int) -> None:
    live = sum(1 for i in range(seq) for j in range(seq) if j <= i and i - j < window)
    macs = _macs(_eager(seq, f"P[%j] <= P[%i] and P[%i] - P[%j] < {window}"))
    assert macs == {"qk": live * D, "pv": live * D}


def test_fully_masked_row_keeps_p_v_dense() -> None:
    """`j < i` leaves query 0 no key. A masked score is the lowest float whatever Q·Kᵀ was (x + lowest rounds
    to lowest), so Q·Kᵀ still counts only the 28 live pairs; but query 0's softmax row is then uniform, not
    zeros (with -inf it would be NaN), so no pair is provably dead in P·V: it stays dense."""
    seq = 8
    live = seq * (seq - 1) // 2
    assert _macs(_eager(seq, "P[%j] < P[%i]")) == {"qk": live * D, "pv": seq * seq * D}
