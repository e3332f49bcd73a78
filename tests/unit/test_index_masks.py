"""Masks as where-clauses (solar.ir.analysis.index_values, mask_domains): a mask built from positions and a
window restricts the scores to its live pairs, counted exactly against brute force."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from solar.ir.analysis.index_values import IndexValues
from solar.ir.analysis.isl_model import evaluate
from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.ops import EinsumOp, KernelOp
from solar.ir.parser import parse_module
from solar.ir.pass_manager import PassContext, PassManager
from solar.passes.lift_einsum import LiftEinsum

D = 2


def _module(queries: int, past: int, window: int, additive: bool) -> str:
    keys = past + queries
    live = "B[%i1] <= A[%i0] and A[%i0] - B[%i1] < " + str(window)
    value = f"select({live}, 0.0, -inf)" if additive else live
    mask_t = "f32" if additive else "i1"
    read = "S[%i, %j] + M[%i, %j]" if additive else "select(M[%i, %j], S[%i, %j], -inf)"
    return f"""
solar.func @f(%q: tensor<{queries}x{D}xf32>, %k: tensor<{keys}x{D}xf32>) -> tensor<{queries}xf32> {{
  %qpos = solar.kernel @qpos() -> (Y: tensor<{queries}xi64>) {{
    affine.for %i0 = 0 to {queries} {{ Y[%i0] = %i0 + {past} }}
  }}
  %kpos = solar.kernel @kpos() -> (Y: tensor<{keys}xi64>) {{
    affine.for %i0 = 0 to {keys} {{ Y[%i0] = %i0 }}
  }}
  %m = solar.kernel @mask(%qpos as A, %kpos as B) -> (Y: tensor<{queries}x{keys}x{mask_t}>) {{
    affine.for %i0 = 0 to {queries} {{ affine.for %i1 = 0 to {keys} {{ Y[%i0, %i1] = {value} }} }}
  }}
  %o = solar.kernel @attn(%q as Q, %k as K, %m as M) -> (mx: tensor<{queries}xf32>) {{
    local S: tensor<{queries}x{keys}xf32>
    affine.for %i = 0 to {queries} {{
      affine.for %j = 0 to {keys} {{ affine.for %d = 0 to {D} {{ S[%i, %j] += Q[%i, %d] * K[%j, %d] }} }}
      affine.for %j = 0 to {keys} {{ mx[%i] max= {read} }}
    }}
  }}
  solar.return %o
}}
"""


def _lift(text: str):
    engine = DiagnosticEngine()
    module = parse_module(text, "<test>", engine)
    assert not engine.has_errors, engine.format_all()
    module = PassManager([LiftEinsum()]).run(module, PassContext(engine, report=lambda _: None))
    assert not engine.has_errors, engine.format_all()
    return module, engine


@settings(max_examples=25, deadline=None)
@given(queries=st.integers(1, 12), past=st.integers(0, 12), window=st.integers(1, 30), additive=st.booleans())
def test_windowed_cache_mask_counts_live_pairs(queries: int, past: int, window: int, additive: bool) -> None:
    module, _ = _lift(_module(queries, past, window, additive))
    live = sum(1 for i in range(queries) for j in range(past + queries) if j <= i + past and i + past - j < window)
    scores = next(op for op in module.entry.walk() if isinstance(op, EinsumOp) and op.symbol == "attn.0")
    assert scores.attrs["counts"]["macs"] == live * D
    # Nothing reads the mask any more: its kernels are gone.
    assert not any(isinstance(op, KernelOp) and op.symbol in ("mask", "qpos", "kpos") for op in module.entry.walk())


def test_mask_value_is_exact_over_symbolic_sizes() -> None:
    """Positions shifted by a cache of 4: query i sees keys 0 .. i + 4, Σ_i (i + 5) = S(S + 9)/2 for every S."""
    text = """
solar.module @m [S = 16] {
  solar.func @f() -> tensor<Sx(S + 4)xi1> {
    %p = solar.kernel @pos() -> (Y: tensor<Sxi64>) { affine.for %i0 = 0 to S { Y[%i0] = %i0 + 4 } }
    %m = solar.kernel @mask(%p as A) -> (Y: tensor<Sx(S + 4)xi1>) {
      affine.for %i0 = 0 to S { affine.for %i1 = 0 to S + 4 { Y[%i0, %i1] = %i1 <= A[%i0] } }
    }
    solar.return %m
  }
}
"""
    module = parse_module(text, "<test>")
    mask = IndexValues(["S"]).mask(module.entry.body[1].results[0])
    assert mask is not None
    card = mask.card()
    for size in (1, 7, 16, 1000):
        assert evaluate(card, {"S": size}) == size * (size + 9) // 2


def test_data_mask_has_no_index_value() -> None:
    module = parse_module("""
solar.func @f(%pad: tensor<4x4xi1>) -> tensor<4x4xi1> {
  %m = solar.kernel @m(%pad as A) -> (Y: tensor<4x4xi1>) {
    affine.for %i0 = 0 to 4 { affine.for %i1 = 0 to 4 { Y[%i0, %i1] = A[%i0, %i1] and %i1 <= %i0 } }
  }
  solar.return %m
}
""", "<test>")
    assert IndexValues([]).mask(module.entry.body[0].results[0]) is None
