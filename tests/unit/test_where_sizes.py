"""Einsum where-clauses that name size parameters (`j<=P`, `i<j+W`): parsing and printing, exact counts
against closed forms at many sizes, the executors, the tiling search and the exports (docs/ir.md)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.backends.executor import run
from solar.backends.export_nvsolar import emit_nvsolar
from solar.backends.export_timeloop import problem
from solar.backends.tiling_problem import build_problem, desc_of
from solar.ir.analysis.counts import einsum_counts
from solar.ir.einsum_spec import SpecError, bind_where, format_where, index_ranges, parse_spec, parse_where
from solar.ir.expr import IndexRef, NameRef
from solar.ir.ops import EinsumOp
from solar.ir.parser import parse_module

# Row sums of a causal matrix over the first P + 1 keys (a static cache at position P), and of a window of W.
TEXT = """solar.module @m [N = 8, P = 3, W = 2] {
  solar.func @f(%a: tensor<NxNxf32>) -> (tensor<Nxf32>, tensor<Nxf32>) {
    %s = solar.einsum @static "ij->i" where "j<=i, j<=P" (%a as A) -> (S: tensor<Nxf32>) {
      S += A
    }
    %w = solar.einsum @window "ij->i" where "j<=i, i<j+W" (%a as A) -> (R: tensor<Nxf32>) {
      R += A
    }
    solar.return %s, %w
  }
}
"""


def _module():
    return parse_module(TEXT, "where_sizes.sir")


def _einsums(module) -> list[EinsumOp]:
    return [op for op in module.walk() if isinstance(op, EinsumOp)]


def test_names_parse_as_indices_or_sizes_and_print_back():
    constraints = parse_where("j <= i, i + W > j, j<=2*CONTEXT-1", "ij")
    assert isinstance(constraints[1].lhs.rhs, NameRef) and constraints[1].lhs.rhs.name == "W"
    assert isinstance(constraints[1].rhs, IndexRef)
    assert format_where(constraints) == "j<=i,i+W>j,j<=2*CONTEXT-1"
    assert parse_where(format_where(constraints), "ij") == constraints
    assert bind_where("j<=i, i+W>j, j<=2*CONTEXT-1", "ij", {"W": 3, "CONTEXT": 4}) == "j<=i,i+3>j,j<=7"
    with pytest.raises(SpecError, match="'CONTXT' is neither an index of the einsum nor a size") as err:
        parse_where("j<=CONTEXT, j<=CONTXT", "ij", {"CONTEXT"})
    assert err.value.offset == 15
    # A bound in the sizes gives an index its range when no dimension does.
    spec = parse_spec("i->i")
    assert index_ranges(spec, [(4,), (4,)], parse_where("i<=P", "i")) == {"i": 4}


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 12), p=st.integers(1, 14), w=st.integers(1, 14))  # sizes are ≥ 1
def test_counts_match_the_closed_forms(n: int, p: int, w: int):
    static, window = _einsums(_module())
    values = {"N": n, "P": p, "W": w}
    # Σ_{i<N} #{j : j ≤ i, j ≤ P} and Σ_{i<N} #{j : j ≤ i, i - j < W}
    assert einsum_counts(static, ["N", "P", "W"], values).points == sum(min(i, p) + 1 for i in range(n))
    assert einsum_counts(window, ["N", "P", "W"], values).points == sum(min(i + 1, w) for i in range(n))


def test_executors_bind_the_sizes_in_the_clause():
    a = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)
    for p, w in ((3, 2), (1, 5), (9, 1)):
        s, r = run(_module(), {"a": a}, {"P": p, "W": w})
        i, j = np.indices((8, 8))
        np.testing.assert_allclose(s, np.where((j <= i) & (j <= p), a, 0).sum(1), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(r, np.where((j <= i) & (i < j + w), a, 0).sum(1), rtol=1e-5, atol=1e-5)


def test_tiling_and_exports_see_the_values():
    module = _module()
    static, window = _einsums(module)
    values = module.param_values()
    assert desc_of(static, values).where == "j<=i,j<=3"
    assert desc_of(window, values).where == "j<=i,i<j+2"
    build_problem("static", [desc_of(static, values)])  # parses at concrete sizes
    _, notes = problem(static, values)
    assert 'where "j<=i,j<=3" is not expressed: the problem is its bounding box' in notes
    layers = yaml.safe_load(emit_nvsolar(module))["layers"]
    assert sorted(layer["solar"]["where"] for layer in layers.values() if "where" in layer.get("solar", {})) == [
        "j<=i,i<j+2", "j<=i,j<=3"]
