"""A gather reads of its table the least rows its ids allow (backends/composition_hooks.least_distinct_ids):
one row for ids that are data (they may all repeat), the image's size for ids that are a function of their
positions, the sorted line for a sort's indices."""

from __future__ import annotations

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
