"""Invariants of the bounds on every example at several buffer sizes (bound_invariants.py): whole graph ≤
fused ≤ unfused and fused ≤ cache-aware in bytes and time (the cache-aware bound may pass the unfused figure),
cache-aware bytes non-increasing in the buffer and equal to
the fused bytes once it holds everything, no NaN or Infinity in the JSON. The corpus programs are checked
the same way in test_frontend_corpus.py, on the modules it translates."""

from __future__ import annotations

from pathlib import Path

import pytest
from bound_invariants import check_bound_invariants

from solar.ir.parser import parse_module

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.sir"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_bounds_keep_their_order(path: Path) -> None:
    docs = check_bound_invariants(parse_module(path.read_text(), str(path)))
    assert len(docs) >= 4


def test_issue_examples_reach_their_fused_bytes() -> None:
    """The DAG-shaped groups of issue 11 are tiled as a whole: RMSNorm over channels (x read by the square
    and by the division) and conv + ReLU + residual (x read through the conv's window and by the add)."""
    rms = check_bound_invariants(parse_module(RMSNORM, "rms.sir"))
    for doc in rms:  # a loop over pixel blocks with all channels on chip: x read once, y written once
        (g,) = doc["targets"][0]["cache_aware"]["groups"]
        assert g["bytes"] == g["fused_bytes"] == 2 * 2 * 64 * 32 * 32 * 4 and g["strategy"] == "fused"


RMSNORM = """
solar.module @rms [N = 2] {
  solar.func @forward(%x: tensor<Nx64x32x32xf32>) -> tensor<Nx64x32x32xf32> {
    %sq = solar.kernel @pow(%x as A) -> (Y: tensor<Nx64x32x32xf32>) {
      affine.for %n = 0 to N { affine.for %c = 0 to 64 { affine.for %h = 0 to 32 { affine.for %w = 0 to 32 {
        Y[%n, %c, %h, %w] = A[%n, %c, %h, %w] * A[%n, %c, %h, %w]
      } } } }
    }
    %m = solar.kernel @mean(%sq as X) -> (Y: tensor<Nx1x32x32xf32>) {
      local acc: tensor<Nx32x32xf32>
      affine.for %n = 0 to N { affine.for %h = 0 to 32 { affine.for %w = 0 to 32 {
        affine.for %c = 0 to 64 {
          acc[%n, %h, %w] += X[%n, %c, %h, %w]
        }
        Y[%n, 0, %h, %w] = acc[%n, %h, %w] / 64.0
      } } }
    }
    %r = solar.kernel @rsqrt(%m as A) -> (Y: tensor<Nx1x32x32xf32>) {
      affine.for %n = 0 to N { affine.for %o = 0 to 1 { affine.for %h = 0 to 32 { affine.for %w = 0 to 32 {
        Y[%n, %o, %h, %w] = rsqrt(A[%n, %o, %h, %w] + 1e-05)
      } } } }
    }
    %y = solar.kernel @div(%x as A, %r as B) -> (Y: tensor<Nx64x32x32xf32>) {
      affine.for %n = 0 to N { affine.for %c = 0 to 64 { affine.for %h = 0 to 32 { affine.for %w = 0 to 32 {
        Y[%n, %c, %h, %w] = A[%n, %c, %h, %w] * B[%n, 0, %h, %w]
      } } } }
    }
    solar.return %y
  }
}
"""
