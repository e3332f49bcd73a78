"""A gather reads of its table the least rows its ids allow (backends/composition_hooks.least_distinct_ids):
one row for ids that are data (they may all repeat), the image's size for ids that are a function of their
positions, the sorted line for a sort's indices."""

from __future__ import annotations

import pytest

import solar

TABLE = 4096 * 1024 * 4  # a 4,096 x 1,024 f32 table


def _fused_bytes(body: str, args: str) -> int:
    text = f"""
solar.module @m {{
  solar.func @f(%table: tensor<4096x1024xf32>{args}) -> tensor<1024xf32> {{
{body}
    %g = solar.gather %table, %ids {{axis = 0}} : tensor<4096x1024xf32>
    %s = solar.kernel @bag(%g as X) -> (Y: tensor<1024xf32>) {{
      affine.for %i0 = 0 to 1024 {{ affine.for %r0 = 0 to 4096 {{ Y[%i0] += X[%r0, %i0] }} }}
    }}
    solar.return %s
  }}
}}
"""
    total = solar.analyze(text, targets="h100").totals["h100-sxm"]
    assert total["fused"].bytes == total["whole_graph"].bytes
    return int(total["fused"].bytes)


def test_embedding_bag_of_data_ids_reads_one_row() -> None:
    """4,096 ids summed in one group: every id may be the same, so one 4 KiB row, the 32 KiB of i64 ids and
    the 4 KiB sum: 40,960 B, not the whole table (16,814,080 B)."""
    assert _fused_bytes("    %ids = solar.reshape %data : tensor<4096xi64>", ", %data: tensor<4096xi64>") \
        == 1024 * 4 + 4096 * 8 + 1024 * 4 == 40_960


def test_ids_of_positions_read_their_image() -> None:
    """ids = i floordiv 4 name 1,024 rows, each read once; the ids themselves are computed in the group."""
    ids = """    %ids = solar.kernel @ids() -> (Y: tensor<4096xi64>) {
      affine.for %i0 = 0 to 4096 { Y[%i0] = %i0 floordiv 4 }
    }"""
    assert _fused_bytes(ids, "") == 1024 * 1024 * 4 + 1024 * 4


def test_sorted_indices_are_a_permutation() -> None:
    """argsort's indices of 4,096 keys name every row: the whole table stays the least."""
    ids = "    %ids = solar.argsort %keys {axis = 0} : tensor<4096xi64>"
    assert _fused_bytes(ids, ", %keys: tensor<4096xf32>") == TABLE + 4096 * 4 + 1024 * 4


def test_uniform_estimate_is_labelled_beside_the_bound() -> None:
    """Data ids: the bound reads one row, and a remark gives what 4,096 uniform ids over 50,257 rows name,
    50,257 · (1 − (1 − 1/50,257)^4,096) ≈ 3,934 rows, as an estimate; ids of a top-k or of positions get none."""
    import math

    from solar.backends.cost import CostModel
    from solar.backends.gather_estimates import data_id_gathers
    from solar.ir.diagnostics import DiagnosticEngine
    from solar.ir.parser import parse_module

    text = """
solar.module @m {
  solar.func @f(%table: tensor<50257x768xf32>, %ids: tensor<4x1024xi64>) -> tensor<4x1024x768xf32> {
    %g = solar.gather %table, %ids {axis = 0} : tensor<4x1024x768xf32>
    solar.return %g
  }
}
"""
    (estimate,) = data_id_gathers(CostModel(parse_module(text, "g.sir", DiagnosticEngine())))
    assert (estimate.rows, estimate.ids, estimate.row_bytes) == (50257, 4096, 768 * 4)
    assert estimate.uniform_rows == pytest.approx(50257 * (1 - (1 - 1 / 50257) ** 4096), rel=1e-9)
    assert round(estimate.uniform_rows) == 3934
    assert "an estimate, not part of the bound" in estimate.sentence()
    analysis = solar.analyze(text, targets="h100")
    assert analysis.totals["h100-sxm"]["fused"].bytes == 768 * 4 + 4096 * 8 + 4096 * 768 * 4
    assert not math.isnan(estimate.uniform_bytes)
    ids = """    %ids = solar.kernel @ids() -> (Y: tensor<4096xi64>) {
      affine.for %i0 = 0 to 4096 { Y[%i0] = %i0 floordiv 4 }
    }"""
    positional = f"""
solar.module @m {{
  solar.func @f(%table: tensor<4096x1024xf32>) -> tensor<4096x1024xf32> {{
{ids}
    %g = solar.gather %table, %ids {{axis = 0}} : tensor<4096x1024xf32>
    solar.return %g
  }}
}}
"""
    assert data_id_gathers(CostModel(parse_module(positional, "p.sir", DiagnosticEngine()))) == []
