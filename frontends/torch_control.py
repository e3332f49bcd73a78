"""PyTorch's `while_loop` (torch._higher_order_ops.while_loop) as a `solar.for` with a static trip count.

SIR loops have static trip counts (a SOL bound is one program for all inputs). A `while_loop` has one when
its condition compares a counter with a Python number and its body steps that counter by a constant, the
counter starting at a constant:

    i0 = torch.tensor(0)
    while_loop(lambda i, h: i < 8, lambda i, h: (i + 1, torch.tanh(h @ w)), (i0, h0))

The trip count is found by running the counter alone (exact, in Python integers); the loop becomes
`solar.for %t = 0 to 8 iter_args(...)` whose body is the body graph, lowered as the main graph is (the
counter stays a carried value, so a body that reads it still works). A condition or a counter that depends
on data gets one located error that says which bound to give.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, Protocol

import torch

from solar.ir.ops import Value

from .diagnostics import Problem
from .lowering.core import Emitter, LoweringError
from .lowering.registry import op_key
from .torch_problem import ArgSource


class GraphLowering(Protocol):
    """What lowering a loop needs of the graph lowering that meets it (torch_export.GraphLowering is one):
    the body is lowered node by node as the main graph is."""

    ep: torch.export.ExportedProgram
    problems: list[Problem]

    def lower_node(self, node: torch.fx.Node, env: dict[torch.fx.Node, Any], em: Emitter) -> None: ...

    def arg_sources(self) -> dict[str, ArgSource]: ...

WHILE_LOOP = torch.ops.higher_order.while_loop
MAX_TRIPS = 1 << 20  # a static loop longer than this is surely a mistake (and slow to count)

_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "aten::lt": operator.lt, "aten::le": operator.le, "aten::gt": operator.gt, "aten::ge": operator.ge,
    "aten::ne": operator.ne, "aten::eq": operator.eq,
}
# Ops that pass a value through unchanged (how export copies a constant counter into the loop).
_PASS_THROUGH = ("aten::clone", "aten::lift_fresh_copy", "aten::detach", "aten::detach_", "aten::alias",
                 "aten::_to_copy", "aten::contiguous")

SUGGESTION = ("give it a static bound: start a counter at a constant (`i = torch.tensor(0)`), compare it with "
              "a Python number in the condition (`i < N`) and step it by a constant in the body (`i + 1`); or "
              "write the loop in Python, `for _ in range(N)`")


def subgraphs(node: torch.fx.Node, root: torch.nn.Module) -> list[torch.fx.GraphModule]:
    """The condition and body graphs of a `while_loop` node."""
    out = []
    for a in node.args[:2]:
        if isinstance(a, torch.fx.Node) and a.op == "get_attr":
            sub = getattr(root, str(a.target), None)
            if isinstance(sub, torch.fx.GraphModule):
                out.append(sub)
    return out


def trip_count(gl: GraphLowering, node: torch.fx.Node) -> int:
    """The static number of iterations of a `while_loop` node; LoweringError (with the suggestion) when it
    has none."""
    subs = subgraphs(node, gl.ep.graph_module)
    if len(subs) != 2:
        raise LoweringError("while_loop without its condition and body graphs")
    cond, body = subs
    carried = list(node.args[2])  # type: ignore[arg-type]
    out = _output(cond)
    test = out[0] if isinstance(out, list | tuple) else out
    if not (isinstance(test, torch.fx.Node) and test.op == "call_function"
            and op_key(test.target) in _COMPARE and len(test.args) == 2):
        raise LoweringError(f"while_loop: the condition is not a comparison of a counter with a number; {SUGGESTION}")
    lhs, rhs = test.args
    compare = _COMPARE[op_key(test.target)]
    if isinstance(rhs, torch.fx.Node) and not isinstance(lhs, torch.fx.Node):
        lhs, rhs = rhs, lhs
        compare = {operator.lt: operator.gt, operator.le: operator.ge, operator.gt: operator.lt,
                   operator.ge: operator.le}.get(compare, compare)
    places = [n for n in cond.graph.nodes if n.op == "placeholder"]
    if not (isinstance(lhs, torch.fx.Node) and lhs in places and isinstance(rhs, int | float)
            and places.index(lhs) < len(carried)):
        raise LoweringError(f"while_loop: the condition does not compare a carried counter with a Python number; "
                            f"{SUGGESTION}")
    k = places.index(lhs)
    step = _step(body, k)
    if step is None:
        raise LoweringError(f"while_loop: the body does not step the counter (carried value {k}) by a constant; "
                            f"{SUGGESTION}")
    start = _constant_value(gl, carried[k])
    if start is None:
        raise LoweringError(f"while_loop: the counter (carried value {k}) does not start at a constant; {SUGGESTION}")
    value, trips = start, 0
    while compare(value, rhs):
        trips += 1
        value = value + step
        if trips > MAX_TRIPS:
            raise LoweringError(f"while_loop: the loop does not end within {MAX_TRIPS} steps (counter from {start} "
                                f"by {step}); {SUGGESTION}")
    return trips


def lower_while_loop(gl: GraphLowering, node: torch.fx.Node, env: dict[torch.fx.Node, Any], em: Emitter) -> None:
    """Lowers a `while_loop` node into `solar.for`; its result (a list of values) goes to `env[node]`."""
    trips = trip_count(gl, node)
    _, body = subgraphs(node, gl.ep.graph_module)
    carried = list(node.args[2])  # type: ignore[arg-type]
    extra = list(node.args[3]) if len(node.args) > 3 else []  # type: ignore[arg-type]
    inits = [env.get(a) for a in carried]
    extras = [env.get(a) for a in extra]
    if not all(isinstance(v, Value) for v in [*inits, *extras]):
        raise LoweringError("while_loop: every carried value must be a tensor")
    loc = em.loc
    var = em.symbol("t").replace(".", "_")
    with em.block.for_(var, 0, trips, inits, hint="while") as region:
        inner = em.inner(region, [*em.for_vars, var])
        places = [n for n in body.graph.nodes if n.op == "placeholder"]
        sub_env: dict[torch.fx.Node, Any] = dict(zip(places, [*region.args, *extras], strict=True))
        before = len(gl.problems)
        outs: list[Any] = []
        for sub in body.graph.nodes:
            if sub.op == "call_function":
                gl.lower_node(sub, sub_env, inner)
            elif sub.op == "output":
                result = sub.args[0]
                outs = [sub_env.get(a) for a in (result if isinstance(result, list | tuple) else [result])]
        if len(gl.problems) > before or not all(isinstance(v, Value) for v in outs):
            raise LoweringError("while_loop: its body could not be translated (see the errors above)")
        region.yield_(*outs)
    em.loc = loc
    loop = em.block.ops[-1]
    for op in loop.walk():  # the body graph's nodes name no user line: they are the loop's
        if op.src_loc is None and loc is not None:
            op.src_loc = loc
    env[node] = list(region.results)


def _output(graph: torch.fx.GraphModule) -> Any:
    out = next(n for n in graph.graph.nodes if n.op == "output")
    return out.args[0]


def _step(body: torch.fx.GraphModule, k: int) -> int | float | None:
    """The constant the body adds to carried value k (`i + 1`, `i - 2`), or None."""
    outs = _output(body)
    outs = list(outs) if isinstance(outs, list | tuple) else [outs]
    places = [n for n in body.graph.nodes if n.op == "placeholder"]
    if k >= len(outs) or k >= len(places):
        return None
    new = outs[k]
    if not (isinstance(new, torch.fx.Node) and new.op == "call_function"
            and op_key(new.target) in ("aten::add", "aten::sub") and len(new.args) >= 2):
        return None
    a, b = new.args[0], new.args[1]
    alpha = new.kwargs.get("alpha", new.args[2] if len(new.args) > 2 else 1)
    if a is not places[k] or not isinstance(b, int | float) or not isinstance(alpha, int | float):
        return None
    step = b * alpha
    return step if op_key(new.target) == "aten::add" else -step


def _constant_value(gl: GraphLowering, node: Any) -> int | float | None:
    """The value of a scalar tensor made from a constant (`torch.tensor(0)`, `torch.zeros(())`), or None."""
    while isinstance(node, torch.fx.Node) and node.op == "call_function" and op_key(node.target) in _PASS_THROUGH:
        node = node.args[0]
    if not isinstance(node, torch.fx.Node):
        return None
    if node.op == "placeholder":
        src = gl.arg_sources().get(node.name)
        value = gl.ep.constants.get(str(src.key)) if src is not None and src.kind == "constant" else None
        if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_meta:
            return value.item()
        return None
    if node.op != "call_function":
        return None
    key = op_key(node.target)
    if key == "aten::scalar_tensor" and isinstance(node.args[0], int | float):
        return node.args[0]
    if key == "aten::full" and isinstance(node.args[1], int | float):
        return node.args[1]
    if key in ("aten::zeros", "aten::ones"):
        return 0 if key == "aten::zeros" else 1
    return None
