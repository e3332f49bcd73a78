"""The einsum graph of a function, as the exporters see it (docs/exports.md): one node per op that computes or
moves data, edges along SSA values, fusion groups looked into (each node knows its group).

A group's results are the values its `solar.yield` names, so edges run from the producing op inside the group
to the readers outside it. `solar.for`, `solar.if` and calls are opaque nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from solar.ir.ops import (
    EinsumOp,
    FuncOp,
    GroupOp,
    KernelOp,
    ModuleOp,
    Op,
    ReturnOp,
    TerminatorOp,
    Value,
    YieldOp,
)
from solar.ir.opt_driver import EmitError
from solar.ir.types import TensorType


class ExportError(EmitError):
    """What an export cannot express; the message is meant for the user."""


@dataclass(eq=False)
class Node:
    id: str
    op: Op
    group: GroupOp | None
    inputs: list[Value]
    outputs: list[Value]

    @property
    def kind(self) -> str:
        return self.op.opname.split(".", 1)[1]


@dataclass
class Graph:
    func: FuncOp
    values: dict[str, int]  # size parameters with their values
    nodes: list[Node] = field(default_factory=list)
    producer: dict[Value, Node] = field(default_factory=dict)
    alias: dict[Value, Value] = field(default_factory=dict)  # group result -> the value yielded for it
    returned: list[Value] = field(default_factory=list)

    def source(self, v: Value) -> Value:
        while v in self.alias:
            v = self.alias[v]
        return v

    def producer_of(self, v: Value) -> Node | None:
        return self.producer.get(self.source(v))

    def readers(self, v: Value) -> list[Node]:
        v = self.source(v)
        return [n for n in self.nodes if any(self.source(x) is v for x in n.inputs)]

    def shape(self, v: Value) -> list[int]:
        assert v.type is not None
        return list(v.type.concrete_shape(self.values))

    def groups(self) -> list[GroupOp]:
        seen: list[GroupOp] = []
        for n in self.nodes:
            if n.group is not None and n.group not in seen:
                seen.append(n.group)
        return seen


def einsum_graph(module: ModuleOp, func_name: str | None = None) -> Graph:
    missing = [p.name for p in module.params if p.default is None]
    if missing:
        raise ExportError(f"size parameters {', '.join(missing)} need values: bind them with "
                          f"--bind-params={missing[0]}=...")
    func = module.lookup(func_name) if func_name else module.entry
    if func is None:
        raise ExportError("the module has no function" if func_name is None else f"no function @{func_name}")
    graph = Graph(func, module.param_values())
    taken: set[str] = set()

    def unique(base: str) -> str:
        name, n = base, 0
        while name in taken:
            n += 1
            name = f"{base}_{n}"
        taken.add(name)
        return name

    def visit(block: list[Op], group: GroupOp | None) -> None:
        for op in block:
            if isinstance(op, GroupOp):
                visit(op.body, op)
                yielded = op.body[-1]
                assert isinstance(yielded, YieldOp)
                for r, y in zip(op.results, yielded.values, strict=True):
                    graph.alias[r] = y
                continue
            if isinstance(op, ReturnOp):
                graph.returned = list(op.values)
                continue
            if isinstance(op, TerminatorOp):
                continue
            symbol = op.symbol if isinstance(op, KernelOp | EinsumOp) else (
                op.results[0].name if op.results else op.opname.split(".")[1])
            node = Node(unique(symbol), op, group, list(op.operands), list(op.results))
            graph.nodes.append(node)
            for r in op.results:
                graph.producer[r] = node

    visit(func.body, None)
    return graph


def element_type(t: TensorType | None) -> str:
    return t.dtype.spelling if t is not None else "?"
