"""Counts are plain data, from one call with no side effects: elements and bytes per tensor read and per
output, for kernels and einsums alike; inside solar.for, the totals over every run with the number of runs,
which --print-counts shows and of which the cost model prices one run."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solar.backends.cost import CostModel
from solar.ir.analysis.counts import Counts
from solar.ir.analysis.kernel_models import ops_with_loops
from solar.ir.analysis.op_counts import OpCounts, func_counts
from solar.ir.ops import EinsumOp, KernelOp, ModuleOp
from solar.ir.parser import parse_module

REPO = Path(__file__).resolve().parents[2]

MATMUL_IN_LOOP = """solar.module @m {
  solar.func @main(%a: tensor<8x4xf32>, %b: tensor<4x2xbf16>) -> tensor<8x2xf32> {
    %c0 = solar.constant 0.0 : tensor<8x2xf32>
    %r = solar.for %t = 0 to 3 iter_args(%acc = %c0) -> (tensor<8x2xf32>) {
      %p = solar.einsum @mm "ik,kj->ij" (%a as A, %b as B) -> (C: tensor<8x2xf32>) {
        C += A * cast<f32>(B)
      }
      solar.yield %p
    }
    solar.return %r
  }
}
"""


def _counts(module: ModuleOp) -> list[tuple[EinsumOp | KernelOp, OpCounts]]:
    found = []
    for op, counts in func_counts(module, module.funcs[0], module.param_values()):
        assert isinstance(counts, OpCounts), counts
        found.append((op, counts))
    return found


def test_an_einsum_gives_elements_and_bytes_per_operand_and_output() -> None:
    [(op, counts)] = _counts(parse_module(MATMUL_IN_LOOP))
    assert isinstance(op, EinsumOp) and counts.in_loop and counts.runs == 3
    one = counts.per_run()
    assert (one.points, one.macs, one.flops_tensor) == (64, 64, 128)
    assert one.elements_read == {"A": 32, "B": 8}
    assert one.bytes_read == {"A": 128, "B": 16}  # bf16: 2 bytes
    assert one.output_elements == {"C": 16} and one.output_bytes == {"C": 64} and one.bytes_written == 64
    assert counts.total.points == 3 * 64 and counts.total.output_bytes == {"C": 3 * 64}


def test_a_kernel_in_a_loop_counts_every_run_and_the_cost_model_prices_one() -> None:
    module = parse_module((REPO / "examples" / "rnn.sir").read_text(encoding="utf-8"))
    [(op, counts)] = _counts(module)
    assert isinstance(op, KernelOp) and counts.runs == 16
    one = counts.per_run()
    assert one.output_elements == {"N": 4 * 64} and one.output_bytes == {"N": 4 * 64 * 4}
    assert one.elements_read["Wx"] == 3 * 64 * 32 and one.bytes_read["Wx"] == 3 * 64 * 32 * 4
    assert counts.total.bytes_read["Wx"] == 16 * one.bytes_read["Wx"]
    # The cost model's unit is the same kernel: one run's counts, times its trips.
    model = CostModel(module)
    [unit] = [w for w in model.units if w.kind == "kernel"]
    assert unit.trips == counts.runs
    loops = next(loops for o, loops in ops_with_loops(module.funcs[0]) if o is op)
    assert model.counts(op, loops) == one


def test_counting_has_no_side_effects() -> None:
    module = parse_module(MATMUL_IN_LOOP)
    first = [c for _, c in _counts(module)]
    assert [c for _, c in _counts(module)] == first
    assert not hasattr(CostModel(module), "kernel_outputs")


@given(st.integers(0, 10**6), st.integers(1, 64), st.sampled_from([1, 2, 4, 8]))
def test_one_run_times_the_runs_is_the_total_when_runs_count_alike(n: int, runs: int, itemsize: int) -> None:
    one = Counts(n, n // 2, n, 3 * n, Counter({"add": n}), {"X": n * itemsize}, n * itemsize, {"X": n},
                 {"Y": n}, {"Y": n * itemsize})
    total = one.scaled(runs)
    assert total.per_run(runs) == one
    summed = Counts()
    for _ in range(runs):
        summed += one
    assert summed == total


def test_a_mean_run_keeps_each_output_to_its_element_size() -> None:
    total = Counts(points=6, bytes_written=24, output_elements={"Y": 6}, output_bytes={"Y": 24})
    one = total.per_run(4)
    assert one.output_elements == {"Y": 1.5} and one.output_bytes == {"Y": 6.0} and one.bytes_written == 6


@pytest.mark.parametrize("runs", [0, 1])
def test_no_or_one_run_is_the_total(runs: int) -> None:
    total = Counts(points=5, output_elements={"Y": 5}, output_bytes={"Y": 20})
    assert total.per_run(runs) is total
