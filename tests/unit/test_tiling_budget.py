"""The bounded tile search (docs/tiling.md, "The search budget"): formulations enumerated directly, a time
budget per tiling problem, long chains cut along their seams, and the fallback to the segment bound."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.backends.tiling import Space
from solar.backends.tiling_ir import LONG_CHAIN, IRChains, group_result, lower_bound, seams
from solar.backends.tiling_milp import closed_sets
from solar.backends.tiling_orders import orientations
from solar.backends.tiling_problem import Budget, SearchStopped, SpaceTooLarge, einsum_problem
from solar.ir import parse_and_verify
from solar.ir.ops import EinsumOp
from solar.tools.solar_opt import run


def by_permutations(n: int, pairs: list[tuple[int, int]]) -> list[tuple[int, ...]]:
    """What the search enumerated before: every permutation, the first of each orientation kept."""
    seen: dict[tuple[bool, ...], tuple[int, ...]] = {}
    for perm in itertools.permutations(range(n)):
        pos = {i: k for k, i in enumerate(perm)}
        seen.setdefault(tuple(pos[a] < pos[b] for a, b in pairs), perm)
    return list(seen.values())


graphs = st.integers(0, 6).flatmap(lambda n: st.tuples(st.just(n), st.lists(
    st.tuples(st.integers(0, max(n - 1, 0)), st.integers(0, max(n - 1, 0))), max_size=12)))


@settings(max_examples=60, deadline=None)
@given(graphs)
def test_orientations_are_those_permutations_induce(graph: tuple[int, list[tuple[int, int]]]) -> None:
    n, edges = graph
    pairs = sorted({(min(a, b), max(a, b)) for a, b in edges if a != b})
    assert orientations(n, pairs, 10**6) == by_permutations(n, pairs)


def test_a_complete_conflict_graph_is_too_large() -> None:
    pairs = [(a, b) for a in range(9) for b in range(a + 1, 9)]  # 9! orientations
    with pytest.raises(SpaceTooLarge, match="more than 1000 formulations"):
        orientations(9, pairs, 1000)
    with pytest.raises(SpaceTooLarge, match=r"at least 2\^11"):  # a spanning forest of 11 edges: no enumeration
        orientations(12, [(k, k + 1) for k in range(11)], 1000)
    assert len(orientations(10, [(k, k + 1) for k in range(9)], 1000)) == 2 ** 9


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 7), st.sets(st.tuples(st.integers(0, 6), st.integers(0, 6))))
def test_closed_sets_are_the_upward_closed_subsets(n: int, edges: set[tuple[int, int]]) -> None:
    ranked = list(range(n))
    above = {i: {b for a, b in edges if a == i and i < b < n} for i in ranked}
    for i in reversed(ranked):  # transitively closed, as Formulation.index makes it
        for j in list(above[i]):
            above[i] |= above[j]
    expected = [frozenset(t) for r in range(n + 1) for t in itertools.combinations(ranked, r)
                if all(above[i] <= set(t) for i in t)]
    assert closed_sets(ranked, above, 10**6) == expected
    if len(expected) > 3:
        with pytest.raises(SpaceTooLarge):
            closed_sets(ranked, above, 3)


def test_a_spent_budget_stops_the_search() -> None:
    problem = einsum_problem("ik,kj->ij", [(512, 256), (256, 384), (512, 384)], itemsize=4)
    space = Space(problem)
    with pytest.raises(SearchStopped, match="budget of 0 s"):
        space.solve(64 * 1024, budget=Budget(0.0))
    m = space.solve(64 * 1024, budget=Budget(None))  # the same space, unbounded: solved (nothing was cached)
    assert m is not None and m.traffic > space.compulsory
    assert Budget(None).left() == float("inf")


def deep_mlp(layers: int, rows: int = 64, width: int = 32) -> str:
    """A chain of `layers` matmuls, each followed by a ReLU, as --lift-einsum and --fuse leave it."""
    t = f"tensor<{rows}x{width}xf32>"
    args, body, x = [f"%x: {t}"], [], "%x"
    for k in range(layers):
        args.append(f"%w{k}: tensor<{width}x{width}xf32>")
        body += [f'      %h{k} = solar.einsum @fc{k} "ik,jk->ij" ({x} as X, %w{k} as W) -> (H: {t}) {{ H += X * W }}',
                 f'      %r{k} = solar.einsum @relu{k} "ij->ij" (%h{k} as H) -> (R: {t}) {{ R = max(H, 0.0) }}']
        x = f"%r{k}"
    return (f"solar.module @deep {{\n  solar.func @forward({', '.join(args)}) -> {t} {{\n"
            f"    %y = solar.group @g0 -> {t} {{\n" + "\n".join(body) + f"\n      solar.yield {x}\n    }}\n"
            "    solar.return %y\n  }\n}\n")


def test_seams_cut_before_every_contraction_but_the_first() -> None:
    func = parse_and_verify(deep_mlp(3)).funcs[0]
    einsums = [op for op in func.walk() if isinstance(op, EinsumOp)]
    assert [[op.symbol for op in piece] for piece in seams(einsums)] == [
        ["fc0", "relu0"], ["fc1", "relu1"], ["fc2", "relu2"]]


def test_a_long_chain_is_cut_and_priced_by_its_pieces() -> None:
    func = parse_and_verify(deep_mlp(LONG_CHAIN + 1)).funcs[0]
    einsums = [op for op in func.walk() if isinstance(op, EinsumOp)]
    chains = IRChains(func, {})
    capacity = 4096.0
    res = group_result(chains, "g0", [[op] for op in einsums], capacity, lower=True)
    assert res.fused is None and res.stopped is not None and "cut along its seams" in res.stopped
    pieces = [chains.solve(f"p{k}", piece, capacity)[0] for k, piece in enumerate(seams(einsums))]
    assert all(m is not None for m in pieces)
    assert res.cut == pytest.approx(sum(m.traffic for m in pieces if m is not None))
    assert res.strategy == "cut" and res.traffic == res.cut <= res.per_einsum
    assert res.floor is not None and res.floor <= res.cut  # the segment bound holds for the cut schedule too
    fused = 4 * (64 * 32 * 2 + 32 * 32 * (LONG_CHAIN + 1))
    assert lower_bound(fused, res.floor) == max(fused, res.floor)  # the bound does not depend on the search


def test_the_pass_remarks_and_sol_prices_at_the_segment_bound(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "deep.sir"
    src.write_text(deep_mlp(LONG_CHAIN + 1))
    code = run([str(src), "-p", "tile-search{buffer=4KiB},sol{target=h100 report=" + str(tmp_path / "r.json") + "}",
                "-o", str(tmp_path / "o.sir")])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "remark: tile-search: group @g0: a chain of 4 contractions is cut along its seams" in err
    report = json.loads((tmp_path / "r.json").read_text())
    (row,) = report["targets"][0]["cache_aware"]["groups"]
    assert "cut along its seams" in row["reason"] and row["strategy"] == "cut"
    assert row["fused_bytes"] <= row["bytes"] <= row["estimate_bytes"]
    assert row["bytes"] == max(row["fused_bytes"] + (row["forced_bytes"] or 0), row["segment_bound_bytes"])


def test_a_negative_budget_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "deep.sir"
    src.write_text(deep_mlp(1))
    assert run([str(src), "-p", "tile-search{budget=-1}"]) == 1
    assert "budget must be a number of seconds >= 0" in capsys.readouterr().err
