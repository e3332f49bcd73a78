"""The traffic a global dependency forces (backends/io_bound_global.py; docs/design/tiling.md, "Global
dependencies"): the first-completion argument on a GEMM with batch norm in training at KernelBench sizes, the
per-fibre one on norms over rows longer than the buffer, what is left out (attention's PV reduction, which
online softmax rewrites), and the cache-aware mode of solar-opt taking it into the group's bound."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_schedule_check import gemm_batchnorm, layernorm
from test_tiling import d
from test_tiling_ir import solar_opt

from solar.backends.io_bound import io_bound
from solar.backends.io_bound_global import global_dependency
from solar.backends.tiling_ir import lower_bound
from solar.backends.tiling_problem import build_problem

L2 = 52428800.0  # H100


def test_gemm_batchnorm_at_kernelbench_sizes() -> None:
    """16384 × 4096 · 4096 × 4096 (f32), the batch norm's statistics over the batch: when the first column's
    statistics complete, every row either holds the other 4095 columns' values (a round trip each, 8 B) or
    reads its row of x again (4096 · 4 B, the lesser): 16384 · 16 KiB, less twice the buffer."""
    problem = build_problem("bn", gemm_batchnorm(16384, 4096, 4096), lambda t: t == "z")
    forced = global_dependency(problem, L2)
    assert forced is not None and forced.argument == "first completion" and forced.fibre == ("b",)
    assert forced.extra == 16384 * 4096 * 4 - 2 * L2
    compulsory = 4 * (16384 * 4096 + 4096 * 4096 + 4096 + 16384 * 4096)
    bound = lower_bound(compulsory, io_bound(problem, L2), forced.extra)
    assert bound == compulsory + forced.extra > 1.25 * compulsory > io_bound(problem, L2)


def test_a_batch_that_fits_forces_nothing() -> None:
    """1024 × 8192 · 8192 × 8192: x (32 MiB) stays in the L2 while the columns go by, each column's
    statistics complete inside the buffer: a schedule moves the compulsory traffic, so nothing is forced."""
    assert global_dependency(build_problem("bn", gemm_batchnorm(1024, 8192, 8192), lambda t: t == "z"), L2) is None


def translated_gemm_batchnorm(batch: int, k: int, n: int) -> list:
    """A linear layer, a scale and a training batch norm as the torch frontend lifts them (KernelBench L2 33,
    39, 41, 97): the bias broadcast, the contraction and their sum, then the statistics over the batch."""
    b = batch
    return [d("bias", "n->bn", [("bias", (n,))], ("y0", (b, n))),
            d("gemm", "bk,nk->bn", [("x", (b, k)), ("w", (n, k))], ("y1", (b, n))),
            d("add", "bn,bn->bn", [("y0", (b, n)), ("y1", (b, n))], ("y", (b, n))),
            d("scale", "bn,n->bn", [("y", (b, n)), ("s", (n,))], ("y2", (b, n))),
            d("sum", "bn->n", [("y2", (b, n))], ("m", (n,))),
            d("var", "bn,n->n", [("y2", (b, n)), ("m", (n,))], ("q", (n,))),
            d("rstd", "n->n", [("q", (n,))], ("r", (n,))),
            d("norm", "bn,n,n,n->bn", [("y2", (b, n)), ("m", (n,)), ("r", (n,)), ("g", (n,))], ("z", (b, n)))]


@pytest.mark.parametrize(("shape", "capacity", "extra"), [
    ((16384, 4096, 4096), L2, 16384 * 4096 * 4 - 2 * L2),  # L2 39, 41, 97: x (256 MiB) beyond the L2
    ((1024, 8192, 8192), L2, None),  # L2 33: x (32 MiB) fits the L2, so does a column's batch: nothing forced
    ((1024, 8192, 8192), 8 * 2**20, 1024 * 8192 * 4 - 2 * 8 * 2**20),  # L2 33 on 8 MiB, below x
])
def test_translated_gemm_batchnorm_at_kernelbench_sizes(shape: tuple[int, int, int], capacity: float,
                                                         extra: float | None) -> None:
    """The GEMM's output is the sum of its broadcast bias and the contraction: the dependency follows the
    contraction (its row of x must be read again), not the bias, which no row depends on."""
    problem = build_problem("bn", translated_gemm_batchnorm(*shape), lambda t: t == "z")
    forced = global_dependency(problem, capacity)
    if extra is None:
        assert forced is None
        return
    assert forced is not None and forced.argument == "first completion" and forced.extra == extra
    b, k, n = shape
    compulsory = 4 * (b * k + n * k + 3 * n + b * n)
    floor = io_bound(problem, capacity)  # on 8 MiB the GEMM's own segment bound is more (397 MB)
    assert lower_bound(compulsory, floor, forced.extra) == max(compulsory + extra, floor) > compulsory


def test_layernorm_over_rows_longer_than_the_buffer() -> None:
    """Rows of 2^24 f32 (64 MiB) on the L2: each row has 2^24 − C/4 elements that are not in the buffer when
    its sum completes; each is read again from x (4 B, less than a round trip)."""
    rows, width = 8, 1 << 24
    forced = global_dependency(build_problem("ln", layernorm(rows, width)), L2)
    assert forced is not None and forced.argument == "per fibre"
    assert forced.extra == rows * (width - L2 / 4) * 4
    assert global_dependency(build_problem("ln", layernorm(rows, 1 << 20)), L2) is None  # rows fit


def test_recomputation_from_a_contraction_is_priced_at_no_bytes() -> None:
    """A row sum of a matmul's result used again over the row: the row's elements can be recomputed from
    operands shared with other elements, which the per-fibre argument prices at no bytes; the first
    completion argument still charges the re-reads of a's rows."""
    descs = [d("mm", "ik,kj->ij", [("a", (64, 4)), ("b", (4, 64))], ("c", (64, 64))),
             d("sum", "ij->i", [("c", (64, 64))], ("s", (64,))),
             d("center", "ij,i->ij", [("c", (64, 64)), ("s", (64,))], ("y", (64, 64)))]
    forced = global_dependency(build_problem("mm-norm", descs), 64.0)
    # Fibres over j: slices j (64), each holds 63 other rows' values (8 B each) or re-reads b[:, j] (16 B).
    assert forced is not None and forced.argument == "first completion" and forced.extra == 64 * 16 - 128


def test_attention_is_left_to_the_segment_bound() -> None:
    """The softmax's exponentials are reduced again by PV (online softmax consumes each score early and
    rescales): no global dependency is claimed."""
    descs = [d("qk", "hid,hjd->hij", [("q", (2, 64, 8)), ("k", (2, 64, 8))], ("s", (2, 64, 64))),
             d("mx", "hij->hi", [("s", (2, 64, 64))], ("m", (2, 64))),
             d("ex", "hij,hi->hij", [("s", (2, 64, 64)), ("m", (2, 64))], ("e", (2, 64, 64))),
             d("pv", "hij,hjd->hid", [("e", (2, 64, 64)), ("v", (2, 64, 8))], ("o", (2, 64, 8)))]
    assert global_dependency(build_problem("attention", descs), 64.0) is None


def test_softmax_output_keeps_the_dependency() -> None:
    """A softmax written out whole: each output element needs its row's max and sum."""
    descs = [d("max", "ij->i", [("x", (4, 256))], ("m", (4,))),
             d("sum", "ij,i->i", [("x", (4, 256)), ("m", (4,))], ("s", (4,))),
             d("norm", "ij,i,i->ij", [("x", (4, 256)), ("m", (4,)), ("s", (4,))], ("y", (4, 256)))]
    forced = global_dependency(build_problem("softmax", descs), 256.0)
    assert forced is not None and forced.extra == 4 * (256 - 64) * 4


BN = """
solar.module @gemm_bn {
  solar.func @f(%x: tensor<256x4xf32>, %w: tensor<16x4xf32>, %s: tensor<16xf32>) -> tensor<256x16xf32> {
    %o = solar.group @g -> tensor<256x16xf32> {
      %y = solar.einsum @gemm "bk,nk->bn" (%x as X, %w as W) -> (Y: tensor<256x16xf32>) attributes {kernel = @gemm} {
        Y += X * W
      }
      %z = solar.einsum @scale "bn,n->bn" (%y as Y, %s as S) -> (Z: tensor<256x16xf32>) attributes {kernel = @scale} {
        Z = Y * S
      }
      %m = solar.einsum @mean "bn->n" (%z as Z) -> (M: tensor<16xf32>) attributes {kernel = @mean} {
        M += Z * 0.00390625
      }
      %t = solar.einsum @center "bn,n->bn" (%z as Z, %m as M) -> (T: tensor<256x16xf32>) attributes {kernel = @center} {
        T = Z - M
      }
      %v = solar.einsum @var "bn->n" (%t as T) -> (V: tensor<16xf32>) attributes {kernel = @var} {
        V += T * T * 0.00390625
      }
      %n = solar.einsum @norm "bn,n->bn" (%t as T, %v as V) -> (N: tensor<256x16xf32>) attributes {kernel = @norm} {
        N = T * rsqrt(V + 1e-05)
      }
      solar.yield %n
    }
    solar.return %o
  }
}
"""


def test_cache_aware_mode_takes_the_forced_traffic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """solar-opt on a GEMM + batch norm in training: at 512 B the group's bound is its fused bytes plus the
    traffic the dependency forces (256 · min(8 · 15, 4 · 4) − 2 · 512 = 3072 B), above the segment bound."""
    src, report = tmp_path / "bn.sir", tmp_path / "r.json"
    src.write_text(BN)
    code, _, err = solar_opt([str(src), "--tile-search=512", "--sol=h100", f"--sol-report={report}",
                              "-o", str(tmp_path / "o.sir")], capsys)
    assert code == 0, err
    (g,) = json.loads(report.read_text())["targets"][0]["cache_aware"]["groups"]
    assert g["forced_bytes"] == 3072
    assert g["bytes"] == max(g["fused_bytes"] + 3072, g["segment_bound_bytes"]) > g["fused_bytes"]
    assert "global dependency" in err or g["bound"] == "segment bound"


def test_a_round_trip_of_a_result_costs_only_its_reload() -> None:
    """Where the normalised tensor's lineage is itself written out (the GEMM's output returned too), keeping
    a value in DRAM costs only the load: its store is compulsory anyway."""
    descs = gemm_batchnorm(64, 32, 4)
    inner = global_dependency(build_problem("bn", descs, lambda t: t == "z"), 64.0)
    returned = global_dependency(build_problem("bn", descs, lambda t: t in ("z", "y")), 64.0)
    assert inner is not None and returned is not None
    # 64 slices · min(round trip · 3 other columns, 32 · 4 B of x's row) − 2 · 64
    assert inner.extra == 64 * min(8 * 3, 128) - 128 and returned.extra == 64 * min(4 * 3, 128) - 128


@settings(max_examples=40, deadline=None)
@given(batch=st.integers(2, 64), k=st.integers(1, 16), n=st.integers(2, 16), width=st.integers(2, 256),
       low=st.floats(8.0, 2048.0), ratio=st.floats(1.0, 16.0))
def test_the_forced_traffic_never_increases_with_the_buffer(batch: int, k: int, n: int, width: int, low: float,
                                                             ratio: float) -> None:
    """A larger buffer holds more of every fibre and saves more re-reads: the forced traffic never grows,
    and a buffer holding the whole reduced tensor forces nothing."""
    for descs in (gemm_batchnorm(batch, k, n), layernorm(batch, width)):
        problem = build_problem("g", descs)

        def extra(c: float, p: object = problem) -> float:
            g = global_dependency(p, c)  # type: ignore[arg-type]
            return 0.0 if g is None else g.extra

        assert extra(low * ratio) <= extra(low)
        assert extra(4.0 * batch * max(n, width) * max(k, 1) * 4) == 0.0


MM_NORM = """
solar.module @mm_norm {
  solar.func @f(%a: tensor<2x8xf32>, %b: tensor<8x4096xf32>) -> tensor<2x4096xf32> {
    %o = solar.group @g -> tensor<2x4096xf32> {
      %c = solar.einsum @mm "ik,kj->ij" (%a as A, %b as B) -> (C: tensor<2x4096xf32>) attributes {kernel = @mm} {
        C += A * B
      }
      %s = solar.einsum @sum "ij->i" (%c as C) -> (S: tensor<2xf32>) attributes {kernel = @sum} {
        S += C
      }
      %y = solar.einsum @center "ij,i->ij" (%c as C, %s as S) -> (Y: tensor<2x4096xf32>) attributes {kernel = @center} {
        Y = C - S
      }
      solar.yield %y
    }
    solar.return %o
  }
}
"""


def test_recomputation_is_priced_on_its_unit_at_the_least_time_split() -> None:
    """Rows of 4096 elements of a matmul's result, normalised over the row, on a 256 B buffer: 2 · (4096 − 64)
    elements wait outside the buffer, each round-tripped (8 B) or recomputed (8 points of the matmul). The
    split the cache-aware mode prices is the least-time one: no slower than a schedule that round-trips
    them all, nor than one that recomputes them all, and never faster than the bound without the choice."""
    from solar.backends.cost import CostModel, Peaks
    from solar.backends.tiling_ir import Tilings, cache_aware, price_recompute
    from solar.ir.parser import parse_module
    from solar.targets.loader import load_target

    module = parse_module(MM_NORM, "mm_norm.sir")
    model, peaks = CostModel(module), Peaks(load_target("h100"))
    plain = cache_aware(model, 256.0, "256", Tilings(module))
    priced = cache_aware(model, 256.0, "256", Tilings(module), peaks)
    (row,) = plain.rows
    (work,) = plain.works
    chains = Tilings(module).chains(model.func)
    group = next(op for op in module.walk() if op.opname == "solar.group")
    ops = [op for op in group.body if op.opname == "solar.einsum"]
    forced = chains.forced("g", ops, 256.0)
    assert forced is not None and forced.recompute is not None
    rec = forced.recompute
    assert rec.elements == 2 * (4096 - 64) and rec.round_trip == 8 and rec.points == 8
    split = price_recompute(work, row["fused_bytes"], rec, model, peaks)
    assert split is not None
    t = peaks.time(split).seconds
    every_trip = dataclasses.replace(work, bytes=max(work.bytes, row["fused_bytes"] + 8 * rec.elements))
    assert t <= peaks.time(every_trip).seconds * (1 + 1e-9)
    assert peaks.time(priced.works[0]).seconds >= peaks.time(work).seconds
    assert priced.rows[0]["bytes"] >= row["bytes"]
