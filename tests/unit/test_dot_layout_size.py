"""The HTML report's gate on Graphviz: layout_size counts what dot's layout would work on, and dot_of lists
the groups instead of drawing a graph past DOT_LAYOUT_LIMIT (decided by the graph, not by a timeout)."""

from __future__ import annotations

import shutil

import pytest

from solar.backends import html_report
from solar.backends.einsum_graph import einsum_graph
from solar.ir.parser import parse_module

# %a -> %b -> %c -> %d in a chain, and %d also reads %a: an edge that skips two ranks.
SKIP = """
solar.func @skip(%x: tensor<8xf32>) -> tensor<8xf32> {
  %a = solar.einsum @a "i->i" (%x as X) -> (A: tensor<8xf32>) {
    A = tanh(X)
  }
  %b = solar.einsum @b "i->i" (%a as A) -> (B: tensor<8xf32>) {
    B = tanh(A)
  }
  %c = solar.einsum @c "i->i" (%b as B) -> (C: tensor<8xf32>) {
    C = tanh(B)
  }
  %d = solar.einsum @d "i,i->i" (%c as C, %a as A) -> (D: tensor<8xf32>) {
    D = C + A
  }
  solar.return %d
}
"""


def test_layout_size_counts_nodes_edges_and_skipped_ranks() -> None:
    from solar.backends.export_dot import layout_size

    graph = einsum_graph(parse_module(SKIP))
    # 4 ops + 1 argument, 5 edges (x->a, a->b, b->c, c->d, a->d) each with a label, and the a->d edge
    # crossing ranks 2 and 3 (two dummies, each doubled for the label ranks).
    assert layout_size(graph) == 4 + 1 + 2 * 5 + 2 * 2


@pytest.mark.skipif(shutil.which("dot") is None, reason="the Graphviz `dot` program is not installed")
def test_dot_of_draws_under_the_limit_and_lists_over_it(monkeypatch: pytest.MonkeyPatch) -> None:
    module = parse_module(SKIP)
    svg = html_report.dot_of(module).svg
    assert svg is not None and svg.startswith("<svg") and "@d" in svg
    monkeypatch.setattr(html_report, "DOT_LAYOUT_LIMIT", 18)  # one under the graph's 19
    listed = html_report.dot_of(module)
    assert listed.svg is None
    assert listed.why_not == ("the graph is too large for Graphviz to lay out in reasonable time (layout size 19, "
                              "over 18)")
    page = html_report.render_html({"module": "m", "targets": []}, graph=listed)
    assert ("(the graph is too large for Graphviz to lay out in reasonable time (layout size 19, over 18): the "
            "groups as a list.)") in page
