"""Formulas of any depth: a program of hundreds of layers sums its counts into formulas hundreds of nodes deep
(a `min` per read of a tensor larger than the loop reading it), and every walk over them (evaluation, the
parameters, text, hashing, equality) is iterative. Main's recursive `_eval` ended a 128-layer sweep in
`RecursionError` (issue 36, item 5)."""

from __future__ import annotations

import copy
import sys

import numpy as np

from solar.backends.cost import CostModel, Peaks
from solar.backends.report import analyse
from solar.backends.sweep import CostSurface
from solar.ir.analysis.formula import Formula
from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.parser import parse_module
from solar.ir.pass_manager import PassContext
from solar.passes.bind_params import BindParams
from solar.targets.loader import load_target

LAYERS = 128
WEIGHTS = 4  # per layer: each read of a T-long weight over S steps costs min(S, T) elements, a `min` node


def deep_program(layers: int = LAYERS) -> str:
    """`layers` elementwise layers, each scaling the running vector (length S) by four weights of length T."""
    weights = ", ".join(f"%w{i}_{j}: tensor<Txf32>" for i in range(layers) for j in range(WEIGHTS))
    lines = ["solar.module @deep [S = 64, T = 128] {",
             f"  solar.func @f(%h0: tensor<Sxf32>, {weights}) -> tensor<Sxf32> {{"]
    for i in range(layers):
        args = ", ".join(f"%w{i}_{j} as W{j}" for j in range(WEIGHTS))
        total = " + ".join(f"W{j}[%i]" for j in range(WEIGHTS))
        lines += [f"    %h{i + 1} = solar.kernel @layer{i}(%h{i} as H, {args}) -> (Y: tensor<Sxf32>) {{",
                  f"      affine.for %i = 0 to S {{ Y[%i] = H[%i] * ({total}) }}",
                  "    }"]
    lines += [f"    solar.return %h{layers}", "  }", "}"]
    return "\n".join(lines)


def depth(f: Formula | int) -> int:
    """The longest path from `f` to a leaf (a stack, as the code under test must)."""
    if not isinstance(f, Formula):
        return 0
    best, stack = 0, [(f, 0)]
    while stack:
        node, d = stack.pop()
        best = max(best, d)
        stack.extend((a, d + 1) for a in node.args)
    return best


def test_a_128_layer_program_is_priced_and_swept() -> None:
    module = parse_module(deep_program(), "<deep>")
    h100 = load_target("h100")
    surface = CostSurface(module, [h100])
    whole = surface.whole.bytes
    # Deeper than the recursion limit allows a recursive walk (two frames a node: the call and its list).
    assert depth(whole) > sys.getrecursionlimit() // 2
    surface.check_swept(["S", "T"])
    # The whole graph reads h0 and writes the result (S floats each) and reads each weight over min(S, T).
    reads = LAYERS * WEIGHTS * 4
    assert whole.evaluate({"S": 64, "T": 128}) == 2 * 64 * 4 + reads * 64
    assert whole.evaluate({"S": 200, "T": 128}) == 2 * 200 * 4 + reads * 128
    sweep = surface.grid({"S": [1, 64, 200], "T": [128, 256]})
    by_point = {(r["point"]["S"], r["point"]["T"], r["mode"]): r for r in sweep.records()}
    assert by_point[(200, 128, "whole_graph")]["bytes"] == 2 * 200 * 4 + reads * 128
    assert by_point[(200, 256, "whole_graph")]["bytes"] == 2 * 200 * 4 + reads * 200
    assert by_point[(1, 128, "unfused")]["bytes"] == LAYERS * (2 * 4 + reads // LAYERS)
    # One point equals --bind-params there followed by --sol, in every mode (a point where the program is
    # right: past T, the weights would be read out of their bounds, and such a program has no bound).
    bound = copy.deepcopy(module)
    BindParams(options={"S": "200", "T": "256"}).apply(PassContext(DiagnosticEngine(), report=lambda _: None),
                                                          bound)
    for mode, r in analyse(CostModel(bound), Peaks(h100), None).modes.items():
        got = by_point[(200, 256, mode)]
        assert (got["flops"], got["bytes"], got["bound"]) == (r.flops, r.bytes, r.bound), mode
    assert len(str(whole)) > 1000 and str(whole).count("min(") == reads // 4


def chain(n: int) -> Formula:
    """max(...max(max(N, M) + 1, M) + 1 ..., M) + 1: 2n nodes deep, worth n + max(N, M) at a point."""
    n_, m_, one = Formula.param("N"), Formula.param("M"), Formula.const(1)
    f = n_
    for _ in range(n):
        f = Formula("add", (Formula("max", (f, m_)), one))
    return f


def test_formulas_far_deeper_than_the_stack() -> None:
    f = chain(5_000)
    assert f.evaluate({"N": 5, "M": 3}) == 5_005
    assert f.evaluate({"N": 2, "M": 7}) == 5_007
    grid = f.evaluate_grid({"N": np.array([1, 9], dtype=object), "M": np.array([4, 4], dtype=object)})
    assert list(grid) == [5_004, 5_009]
    assert f.params == frozenset({"N", "M"})
    assert str(f).startswith("(max((max(") and str(f).count("max(") == 5_000
    g = chain(5_000)
    assert f == g and hash(f) == hash(g)
    assert f != chain(4_999)
