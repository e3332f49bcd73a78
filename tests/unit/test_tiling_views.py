"""Views, broadcasts and constants inside a chain (backends/tiling_views.py; docs/tiling.md, "Views,
broadcasts and constants"): the tiling problem of einsums reading them is the problem of einsums reading what
they view, written by hand; the MILP agrees with brute force on it, and the cache-aware bound stays below
every replayed schedule of it."""

from __future__ import annotations

import pytest
from test_schedule_check import check

from solar.backends.io_bound import io_bound
from solar.backends.tiling import Space
from solar.backends.tiling_ir import IRChains
from solar.backends.tiling_problem import EinsumDesc, Unfusable, build_problem
from solar.ir import parse_and_verify
from solar.ir.ops import EinsumOp

F = 4

VIEWS = """
solar.module @views {
  solar.func @f(%x: tensor<12x8xf32>, %w: tensor<12x6xf32>, %bias: tensor<6xf32>, %u: tensor<8x12xf32>)
      -> (tensor<8x6xf32>, tensor<8x3xf32>) {
    %xt = solar.permute %x {perm = [1, 0]} : tensor<8x12xf32>
    %c = solar.einsum @mm "ik,kj->ij" (%xt as A, %w as B) -> (C: tensor<8x6xf32>) attributes {kernel = @mm} {
      C += A * B
    }
    %bb = solar.broadcast %bias {dims = [1]} : tensor<8x6xf32>
    %y = solar.einsum @bias "ij,ij->ij" (%c as C, %bb as D) -> (Y: tensor<8x6xf32>) attributes {kernel = @bias} {
      Y = C + D
    }
    %k = solar.constant 0.5 : tensor<8x6xf32>
    %s = solar.einsum @scale "ij,ij->ij" (%y as Y, %k as K) -> (S: tensor<8x6xf32>) attributes {kernel = @scale} {
      S = Y * K
    }
    %ur = solar.reshape %u : tensor<8x3x4xf32>
    %r = solar.einsum @rows "ihd->ih" (%ur as U) -> (R: tensor<8x3xf32>) attributes {kernel = @rows} {
      R += U
    }
    %bad = solar.reshape %u : tensor<96xf32>
    %m = solar.einsum @flat "n->n" (%bad as V) -> (M: tensor<96xf32>) attributes {kernel = @flat} {
      M = V
    }
    solar.return %s, %r
  }
}
"""


def _ops() -> tuple[IRChains, dict[str, EinsumOp]]:
    func = parse_and_verify(VIEWS).funcs[0]
    return IRChains(func, {}), {op.symbol: op for op in func.walk() if isinstance(op, EinsumOp)}


def d(name: str, spec: str, inputs: list[tuple[str, str, tuple[int, ...]]], output: tuple[str, str, tuple[int, ...]],
      where: str | None = None) -> EinsumDesc:
    return EinsumDesc(name, spec, tuple((t, label, s, F) for t, label, s in inputs), (*output, F), where)


BY_HAND = [d("mm", "ki,kj->ij", [("x", "A", (12, 8)), ("w", "B", (12, 6))], ("c", "C", (8, 6))),
           d("bias", "ij,j->ij", [("c", "C", (8, 6)), ("bias", "D", (6,))], ("y", "Y", (8, 6))),
           d("scale", "ij->ij", [("y", "Y", (8, 6))], ("s", "S", (8, 6)))]


def test_a_chain_through_a_permute_a_broadcast_and_a_constant_is_the_chain_on_their_sources() -> None:
    """The permuted operand is read as x[k, i], the broadcast bias as bias[j] (once per tile, j free), and
    the constant not at all: the same problem as the chain written on the sources."""
    chains, ops = _ops()
    problem = chains.problem("g", [ops["mm"], ops["bias"], ops["scale"]])
    assert problem == build_problem("g", BY_HAND, lambda t: t == "s")
    assert Space(problem).compulsory == F * (12 * 8 + 12 * 6 + 6 + 8 * 6)  # x, w, bias, s: no constant


def test_a_split_reshape_is_an_affine_read_and_a_merge_is_not() -> None:
    chains, ops = _ops()
    problem = chains.problem("rows", [ops["rows"]])
    by_hand = build_problem("rows", [d("rows", "i(4h+d)->ih", [("u", "U", (8, 12))], ("r", "R", (8, 3)), "d<4")])
    assert problem == by_hand and Space(problem).compulsory == F * (8 * 12 + 8 * 3)
    with pytest.raises(Unfusable, match="merges dimensions"):
        chains.problem("flat", [ops["flat"]])


@pytest.mark.parametrize("fraction", [0.15, 0.4])
def test_milp_equals_brute_force_and_the_bound_holds_through_views(fraction: float) -> None:
    chains, ops = _ops()
    problem = chains.problem("g", [ops["mm"], ops["bias"], ops["scale"]])
    space = Space(problem)
    capacity = space.compulsory * fraction
    milp, brute = space.solve(capacity), space.brute_force(capacity)
    assert milp is not None and brute is not None
    assert milp.traffic == pytest.approx(brute.traffic, rel=1e-9)
    descs, _ = chains.piece([ops["mm"], ops["bias"], ops["scale"]])
    bound, least, _ = check(list(descs), capacity)
    assert bound >= max(space.compulsory, io_bound(problem, capacity)) and bound <= least
