"""index_values through reshapes that merge or split dims (quasi-affine floordiv/mod): HF's packed-sequence
remap flattens positions to BATCH*S and gathers them back at `b * S + q`, and the mask it builds stays an
index value, counted at its live pairs."""

from __future__ import annotations

import islpy as isl
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.ir.analysis.index_values import IndexValues
from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.ops import EinsumOp
from solar.ir.parser import parse_module
from solar.ir.pass_manager import PassContext, PassManager
from solar.passes.lift_einsum import LiftEinsum

D = 2


def _value_at(value: isl.PwAff, batch: int, index: tuple[int, ...]) -> int:
    space = value.get_domain_space()
    point = isl.Point.zero(space).set_coordinate_val(isl.dim_type.param, 0, isl.Val(batch))
    for k, x in enumerate(index):
        point = point.set_coordinate_val(isl.dim_type.set, k, isl.Val(x))
    return int(value.eval(point).to_python())


def test_flatten_and_split_keep_every_element() -> None:
    """Y[b, s] = 10·b + s over BATCH x 6, flattened to BATCH·6 and split to (BATCH·2) x 3: each element is
    the one row-major order puts there, for every BATCH."""
    module = parse_module("""
solar.module @m [BATCH = 3] {
  solar.func @f() -> tensor<(BATCH * 2)x3xi64> {
    %p = solar.kernel @pos() -> (Y: tensor<BATCHx6xi64>) {
      affine.for %i0 = 0 to BATCH { affine.for %i1 = 0 to 6 { Y[%i0, %i1] = 10 * %i0 + %i1 } }
    }
    %flat = solar.reshape %p : tensor<(BATCH * 6)xi64>
    %split = solar.reshape %flat : tensor<(BATCH * 2)x3xi64>
    solar.return %split
  }
}
""", "<test>")
    values = IndexValues(["BATCH"])
    flat, split = (values.of(op.results[0]) for op in module.entry.body[1:3])
    assert isinstance(flat, isl.PwAff) and isinstance(split, isl.PwAff)
    for batch in (1, 3, 5):
        elements = [10 * b + s for b in range(batch) for s in range(6)]
        assert [_value_at(flat, batch, (n,)) for n in range(batch * 6)] == elements
        assert [_value_at(split, batch, (r, c)) for r in range(batch * 2) for c in range(3)] == elements


def test_symbolic_inner_size_has_no_index_value() -> None:
    """Flattening BATCH x S with S symbolic needs the stride S: not quasi-affine, so no value (dense)."""
    module = parse_module("""
solar.module @m [BATCH = 2, S = 8] {
  solar.func @f() -> tensor<(BATCH * S)xi64> {
    %p = solar.kernel @pos() -> (Y: tensor<BATCHxSxi64>) {
      affine.for %i0 = 0 to BATCH { affine.for %i1 = 0 to S { Y[%i0, %i1] = %i1 } }
    }
    %flat = solar.reshape %p : tensor<(BATCH * S)xi64>
    solar.return %flat
  }
}
""", "<test>")
    assert IndexValues(["BATCH", "S"]).of(module.entry.body[1].results[0]) is None


def _packed(seq: int, window: int) -> str:
    """The shape of transformers >= 5.24's mask without a cache: positions [BATCH, S] flattened to BATCH·S and
    gathered at `b * S + q` for the query and the key side, then compared (window and causal)."""
    return f"""
solar.module @m [BATCH = 2] {{
  solar.func @f(%q: tensor<BATCHx{seq}x{D}xf32>, %k: tensor<BATCHx{seq}x{D}xf32>) -> tensor<BATCHx{seq}xf32> {{
    %pos = solar.kernel @pos() -> (Y: tensor<BATCHx{seq}xi64>) {{
      affine.for %i0 = 0 to BATCH {{ affine.for %i1 = 0 to {seq} {{ Y[%i0, %i1] = %i1 }} }}
    }}
    %flat = solar.reshape %pos : tensor<(BATCH * {seq})xi64>
    %at = solar.kernel @at() -> (F: tensor<BATCHx{seq}xi64>) {{
      affine.for %i0 = 0 to BATCH {{ affine.for %i1 = 0 to {seq} {{ F[%i0, %i1] = %i0 * {seq} + %i1 }} }}
    }}
    %p = solar.gather %flat, %at {{axis = 0}} : tensor<BATCHx{seq}xi64>
    %m = solar.kernel @mask(%p as A) -> (Y: tensor<BATCHx{seq}x{seq}xf32>) {{
      affine.for %b = 0 to BATCH {{ affine.for %i = 0 to {seq} {{ affine.for %j = 0 to {seq} {{
        Y[%b, %i, %j] = select(A[%b, %j] <= A[%b, %i] and A[%b, %j] > A[%b, %i] - {window}, 0.0,
                               -3.4028234663852886e+38)
      }} }} }}
    }}
    %o = solar.kernel @attn(%q as Q, %k as K, %m as M) -> (mx: tensor<BATCHx{seq}xf32>) {{
      local S: tensor<BATCHx{seq}x{seq}xf32>
      affine.for %b = 0 to BATCH {{ affine.for %i = 0 to {seq} {{
        affine.for %j = 0 to {seq} {{ affine.for %d = 0 to {D} {{ S[%b, %i, %j] += Q[%b, %i, %d] * K[%b, %j, %d] }} }}
        affine.for %j = 0 to {seq} {{ mx[%b, %i] max= S[%b, %i, %j] + M[%b, %i, %j] }}
      }} }}
    }}
    solar.return %o
  }}
}}
"""


@settings(max_examples=10, deadline=None)
@given(seq=st.integers(1, 20), window=st.integers(1, 24))
def test_packed_sequence_mask_counts_live_pairs(seq: int, window: int) -> None:
    engine = DiagnosticEngine()
    module = parse_module(_packed(seq, window), "<test>", engine)
    remarks: list[str] = []
    module = PassManager([LiftEinsum()]).run(module, PassContext(engine, report=remarks.append))
    assert not engine.has_errors, engine.format_all()
    live = sum(1 for i in range(seq) for j in range(seq) if j <= i and j > i - window)
    scores = next(op for op in module.entry.walk() if isinstance(op, EinsumOp) and op.symbol == "attn.0")
    macs = scores.attrs["counts"]["macs"]
    assert macs == 2 * live * D  # at BATCH = 2
