"""`--emit=dot`: the einsum graph as Graphviz text (docs/exports.md).

Nodes are the ops that compute or move data (einsums, kernels, data-moving and layout ops), the function's
arguments and its results; edges follow SSA values and carry their name, shape and dtype; each fusion group
is a cluster. An einsum's label has its symbol, subscripts, FLOPs and bytes (exact counts) and, after
`--sol`, its time and bound on each target.
"""

from __future__ import annotations

from typing import Any

import graphviz

from solar.backends.einsum_graph import Graph, Node, einsum_graph, element_type
from solar.backends.report import quantity, seconds
from solar.ir.analysis.counts import Counts, einsum_counts
from solar.ir.expr import format_expr
from solar.ir.ops import EinsumOp, KernelOp, ModuleOp, Value

_SHAPES = {"einsum": "box", "kernel": "box3d"}


def emit_dot(module: ModuleOp, graph: Graph | None = None) -> str:
    """The Graphviz text of `module`'s einsum graph (`graph`: that graph, when the caller has it already)."""
    if graph is None:
        graph = einsum_graph(module)
    dot = graphviz.Digraph(name=module.name or graph.func.name, graph_attr={"rankdir": "TB", "fontsize": "10"},
                           node_attr={"fontname": "Helvetica", "fontsize": "10"},
                           edge_attr={"fontname": "Helvetica", "fontsize": "8"})
    for arg in graph.func.args:
        dot.node(_arg_id(arg), f"%{arg.name}\\n{_type(graph, arg)}", shape="invhouse")
    clusters: dict[Any, graphviz.Digraph] = {}
    for group in graph.groups():
        sub = graphviz.Digraph(name=f"cluster_{group.symbol}")
        sub.attr(label=_group_label(group), style="rounded,dashed", fontname="Helvetica", fontsize="10")
        clusters[group] = sub
    params = [p.name for p in module.params]
    for node in graph.nodes:
        target = clusters.get(node.group, dot)
        target.node(node.id, _label(node, graph, params), shape=_SHAPES.get(node.kind, "ellipse"),
                    style="rounded" if node.kind == "einsum" else "")
    for sub in clusters.values():
        dot.subgraph(sub)
    for node in graph.nodes:
        for v in node.inputs:
            src = graph.source(v)
            producer = graph.producer.get(src)
            tail = producer.id if producer is not None else _arg_id(src)
            dot.edge(tail, node.id, label=f"%{src.name}\\n{_type(graph, src)}")
    for k, v in enumerate(graph.returned):
        src = graph.source(v)
        dot.node(f"return{k}", f"result {k}", shape="house")
        producer = graph.producer.get(src)
        dot.edge(producer.id if producer is not None else _arg_id(src), f"return{k}",
                 label=f"%{src.name}\\n{_type(graph, src)}")
    return dot.source


def layout_size(graph: Graph) -> int:
    """About how many nodes dot's layout works on for this graph: its nodes and edge labels, plus a dummy
    node per rank an edge crosses (counted twice: an edge label takes a rank of its own). Each op sits one
    rank below its deepest producer, each argument just above its first reader, as dot's ranking puts them.
    A DenseNet, whose concatenations read layers far back, comes to hundreds of thousands, which dot cannot
    lay out in minutes; a ResNet of as many ops comes to about ten thousand."""
    rank: dict[int, int] = {}  # by id(node)
    edges: list[tuple[Node | None, Node]] = []  # (producer, reader); None: a function argument
    for node in graph.nodes:
        producers = [graph.producer.get(graph.source(v)) for v in node.inputs]
        rank[id(node)] = 1 + max((rank.get(id(p), 0) for p in producers if p is not None), default=0)
        edges += [(p, node) for p in producers]
    first_read: dict[Value, int] = {}  # an argument's rank: just above its first reader
    for node in graph.nodes:
        for v in node.inputs:
            src = graph.source(v)
            if src not in graph.producer:
                first_read[src] = min(first_read.get(src, rank[id(node)]), rank[id(node)])
    dummies = sum(max(0, rank[id(head)] - rank[id(tail)] - 1) for tail, head in edges if tail is not None)
    return len(graph.nodes) + len(first_read) + 2 * len(edges) + 2 * dummies


def _arg_id(v: Value) -> str:
    return f"arg.{v.name}"


def _type(graph: Graph, v: Value) -> str:
    return "x".join(str(d) for d in graph.shape(v)) + "x" + element_type(v.type)


def _label(node: Node, graph: Graph, params: list[str]) -> str:
    op = node.op
    lines: list[str]
    if isinstance(op, EinsumOp):
        where = f' where "{op.where}"' if op.where else ""
        lines = [f"@{op.symbol}", f'"{op.spec}"{where}', f"{op.body[0].target} {op.body[0].op} "
                 f"{format_expr(op.body[0].value)}"]
        counts = einsum_counts(op, params, graph.values)
        lines.append(_figures(counts))
    elif isinstance(op, KernelOp):
        lines = [f"@{op.symbol}", "kernel (loop nest)"]
    else:
        lines = [f"{op.opname} %{op.results[0].name}" if op.results else op.opname]
    kernel = op.attrs.get("kernel")
    # --sol puts a unit's time on its first op; a unit of several einsums (one kernel) is named.
    unit = f" (unit @{kernel.name})" if kernel is not None and kernel.name != getattr(op, "symbol", "") else ""
    for entry in op.attrs.get("sol", []) if isinstance(op.attrs.get("sol"), list) else []:
        if isinstance(entry, dict) and "time_s" in entry:
            lines.append(f"{entry.get('target')}{unit}: {seconds(entry['time_s'])} {entry.get('bound', '')}".rstrip())
    return "\\n".join(lines)


def _figures(counts: Counts) -> str:
    moved = sum(counts.bytes_read.values()) + counts.bytes_written
    return f"FLOPs {quantity(counts.flops)} · bytes {quantity(moved)}"


def _group_label(group: Any) -> str:
    lines = [f"@{group.symbol}"]
    for entry in group.attrs.get("sol", []) if isinstance(group.attrs.get("sol"), list) else []:
        if isinstance(entry, dict) and "time_s" in entry:
            lines.append(f"{entry.get('target')}: {seconds(entry['time_s'])} {entry.get('bound', '')}".rstrip())
    return "\\n".join(lines)
