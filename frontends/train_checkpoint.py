"""Activation checkpointing in a training step: `torch.utils.checkpoint.checkpoint(fn, *args)` regions whose
activations the backward recomputes instead of reading them from the forward.

    with checkpoint_regions():                  # while the loss is exported
        ep = torch.export.export(...)
    mark_regions(ep)                            # boundary markers around each region, before the joint graph
    joint = joint_program(ep)
    regions = recompute_regions(joint)          # markers out; the backward's reads of inner values recomputed

torch.export (non-strict, as SOLAR exports) inlines a checkpointed function: its ops are in the graph with
no trace of the checkpoint, and AOT autograd's joint graph then saves its activations as any other (strict
export makes a `tag_activation_checkpoint` higher-order op that torch.export cannot lower, and the joint
graph keeps no node metadata). So:

1. While the loss is exported, `checkpoint_regions` tags the nodes each checkpoint call traces with its
   region (`torch.fx.traceback.annotate`, kept by `preserve_node_meta`); a reentrant checkpoint (which runs
   its function under no_grad, so the exported forward would have no gradient) is traced as the
   non-reentrant one, whose gradients are the same. A checkpoint inside another belongs to the outer one.
2. `mark_regions` puts an identity custom op (`solar::checkpoint_boundary`, its gradient the identity) on
   every value entering a region and every value leaving it. Custom ops survive AOT autograd's joint graph.
3. `recompute_regions` finds each region in the joint graph (the forward nodes between its entry and exit
   markers), removes the markers, and gives every backward node that reads a value inside a region (not one
   the region returns) a recomputed copy instead: the region's nodes that value needs, copied into the
   backward from the region's inputs. What the backward saves from a region is then its inputs (and its
   outputs, which the checkpoint returns as ordinary tensors), as PyTorch's checkpoint saves.

The copies are nodes of the backward, so their FLOPs and traffic are the backward's; they recompute only
what the backward reads (PyTorch's eager checkpoint stops its rerun at the last tensor it needs, torch.compile
recomputes only those). Random ops are not recomputed: their values are read from the forward (PyTorch
replays the generator's state instead; the bound counts the mask's traffic).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

REGION_KEY = "solar_checkpoint"  # node.meta["custom"] key of a checkpointed node's region while exporting
RECOMPUTE_KEY = "solar_recompute"  # node.meta key of a recomputed copy: its region


@torch.library.custom_op("solar::checkpoint_boundary", mutates_args=())
def checkpoint_boundary(x: torch.Tensor, region: int, exit: bool) -> torch.Tensor:
    """A value entering (exit False) or leaving a checkpointed region: the identity."""
    return x.clone()


@checkpoint_boundary.register_fake
def _(x: torch.Tensor, region: int, exit: bool) -> torch.Tensor:
    return torch.empty_like(x)


def _boundary_backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
    return grad, None, None


checkpoint_boundary.register_autograd(_boundary_backward)
BOUNDARY = torch.ops.solar.checkpoint_boundary.default


@contextlib.contextmanager
def checkpoint_regions() -> Iterator[None]:
    """While exporting: each `torch.utils.checkpoint.checkpoint` call tags the nodes it traces with a region
    number (node.meta["custom"][REGION_KEY]); reentrant checkpoints are traced as non-reentrant ones."""
    import torch.fx.traceback as fx_traceback
    import torch.utils.checkpoint as ckpt

    original = ckpt._checkpoint_without_reentrant_generator
    had_apply = "apply" in vars(ckpt.CheckpointFunction)
    numbers = itertools.count()

    def tagged(*args: Any, **kwargs: Any) -> Iterator[None]:
        if REGION_KEY in (fx_traceback.current_meta.get("custom") or {}):
            # Inside another region: part of it, traced as a plain call (a nested checkpoint's own logic
            # leaves torch.export a forward without gradients).
            yield
            return
        if args[2] is not ckpt.noop_context_fn:  # (function, preserve_rng_state, context_fn, ...)
            raise _at_user_line("torch.utils.checkpoint with a context_fn (selective activation checkpointing: "
                                "a policy that saves some ops) is not modelled: only whole regions are recomputed")
        inner = original(*args, **kwargs)
        next(inner)  # the checkpoint's own pre-forward logic
        with fx_traceback.annotate({REGION_KEY: next(numbers)}):
            yield  # the checkpointed function runs here
        yield from inner

    def reentrant(function: Any, preserve: bool, *args: Any) -> Any:
        return ckpt.checkpoint(function, *args, use_reentrant=False, preserve_rng_state=preserve)

    ckpt._checkpoint_without_reentrant_generator = tagged
    ckpt.CheckpointFunction.apply = reentrant  # type: ignore[method-assign,assignment]
    try:
        with fx_traceback.preserve_node_meta():
            yield
    finally:
        ckpt._checkpoint_without_reentrant_generator = original
        if not had_apply:
            del ckpt.CheckpointFunction.apply


def _at_user_line(message: str) -> Exception:
    """A SourceError at the innermost line of the user's program on the stack (the checkpoint call)."""
    import sys

    from .diagnostics import SourceError, _is_user_frame, source_line

    frame = sys._getframe(1)
    while frame is not None and not _is_user_frame(frame.f_code.co_filename, str(frame.f_globals.get("__name__"))):
        frame = frame.f_back  # type: ignore[assignment]
    return SourceError(message, source_line(frame.f_code.co_filename, frame.f_lineno) if frame else None)


def _region_of(node: torch.fx.Node) -> int | None:
    custom = node.meta.get("custom")
    return custom.get(REGION_KEY) if isinstance(custom, dict) else None


def _is_tensor(node: torch.fx.Node) -> bool:
    return isinstance(node.meta.get("val"), torch.Tensor)


def mark_regions(ep: torch.export.ExportedProgram) -> int:
    """Boundary markers on the values entering and leaving each tagged region of the exported loss (in place),
    in its graph and in the graphs of its higher-order ops (an autocast region is one: `wrap_with_autocast`);
    returns how many regions there are."""
    count = 0
    for gm in ep.graph_module.modules():
        if isinstance(gm, torch.fx.GraphModule):
            count += _mark_graph(gm)
    return count


def _mark_graph(gm: torch.fx.GraphModule) -> int:
    graph = gm.graph
    regions: dict[int, list[torch.fx.Node]] = {}
    for node in graph.nodes:
        region = _region_of(node) if node.op == "call_function" else None
        if region is not None:
            regions.setdefault(region, []).append(node)
    for region, members in regions.items():
        order = {n: k for k, n in enumerate(graph.nodes)}  # anew: the previous region added markers
        inside = set(members)
        entering: dict[torch.fx.Node, list[torch.fx.Node]] = {}
        for node in members:
            for value in node.all_input_nodes:
                if value not in inside and _is_tensor(value):
                    entering.setdefault(value, []).append(node)
        for value, users in entering.items():
            # Before the region's first node where possible, so that whatever the region computes comes after.
            at = members[0] if order[value] < order[members[0]] else users[0]
            with graph.inserting_before(at):
                marker = graph.call_function(BOUNDARY, (value, region, False))
            marker.meta["val"] = value.meta["val"]
            for user in users:
                user.replace_input_with(value, marker)
        for node in members:
            outside = [u for u in node.users if u not in inside and u.op == "call_function"]
            if outside and _is_tensor(node):
                with graph.inserting_after(node):
                    marker = graph.call_function(BOUNDARY, (node, region, True))
                marker.meta["val"] = node.meta["val"]
                for user in outside:
                    user.replace_input_with(node, marker)
    if regions:
        gm.recompile()
    return len(regions)


@dataclass
class Region:
    """A checkpointed region of the joint graph: its forward nodes and the backward's recomputed copies."""

    number: int
    nodes: list[str]  # the region's forward nodes, by name
    recomputed: list[str]  # the backward's copies of those it reads


def _forward_nodes(graph: torch.fx.Graph, loss: torch.fx.Node) -> set[torch.fx.Node]:
    seen: set[torch.fx.Node] = set()
    stack = [loss]
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(node.all_input_nodes)
    return seen


def _random(node: torch.fx.Node) -> bool:
    """Whether the node draws random numbers: a seeded op, but for attention without dropout."""
    target = node.target
    if not isinstance(target, torch._ops.OpOverload) or torch.Tag.nondeterministic_seeded not in target.tags:
        return False
    for k, arg in enumerate(target._schema.arguments):
        if arg.name == "dropout_p":
            return bool(node.kwargs.get("dropout_p", node.args[k] if k < len(node.args) else arg.default_value))
    return True


def recompute_regions(program: Any) -> list[Region]:
    """The joint graph (in place): each region found between its markers, the markers removed, and every read
    of a region's inner value by the backward replaced by a recomputed copy placed before its first reader."""
    from torch.export.graph_signature import InputKind, OutputKind

    graph = program.graph_module.graph
    markers = [n for n in graph.nodes if n.op == "call_function" and n.target is BOUNDARY]
    if not markers:
        return []
    out = graph.output_node()
    loss = next(node for spec, node in zip(program.graph_signature.output_specs, out.args[0], strict=True)
                if spec.kind == OutputKind.LOSS_OUTPUT)
    forward = _forward_nodes(graph, loss)
    order = {n: k for k, n in enumerate(graph.nodes)}
    found: dict[int, tuple[set[torch.fx.Node], set[torch.fx.Node]]] = {}
    for number in sorted({int(m.args[1]) for m in markers}):  # type: ignore[call-overload]
        entries = [m for m in markers if m.args[1] == number and not m.args[2]]
        exits = [m for m in markers if m.args[1] == number and m.args[2]]
        start = min((order[m] for m in entries), default=-1)
        # The region: forward nodes after its first entry from which an exit is reached without an entry.
        nodes: set[torch.fx.Node] = set()
        stack = [m.args[0] for m in exits]
        while stack:
            node = stack.pop()
            if not isinstance(node, torch.fx.Node) or node in nodes or node.op != "call_function" \
                    or node.target is BOUNDARY or node not in forward or order[node] < start \
                    or isinstance(node.meta.get("val"), torch.SymInt | int):
                continue
            nodes.add(node)
            stack.extend(node.all_input_nodes)
        found[number] = (nodes, {m.args[0] for m in exits})  # type: ignore[misc]
    for m in markers:
        m.replace_all_uses_with(m.args[0])  # type: ignore[arg-type]
        graph.erase_node(m)
    weights = {n for n, spec in zip((n for n in graph.nodes if n.op == "placeholder"),
                                    program.graph_signature.input_specs, strict=True)
               if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)}
    regions = [_recompute(graph, number, nodes - _weight_derived(nodes, weights), returned, forward, loss)
               for number, (nodes, returned) in found.items()]
    # A copy placed before a reader early in the graph (a detach of an inner value) may read a forward value
    # that comes later: a stable topological sort moves only what must move.
    from torch.fx.passes.tools_common import stable_topological_sort

    stable_topological_sort(program.graph_module)  # a new graph: the nodes are copies
    program.graph_module.graph.lint()
    program.graph_module.recompile()
    return regions


def _weight_derived(nodes: set[torch.fx.Node], weights: set[torch.fx.Node]) -> set[torch.fx.Node]:
    """The region's nodes computed from weights alone (a weight's cast to bf16 under autocast): no activation,
    so the backward reads the forward's value rather than recomputing it."""
    derived: set[torch.fx.Node] = set()
    for node in sorted(nodes):  # fx orders nodes: inputs first
        inputs = [i for i in node.all_input_nodes if isinstance(i.meta.get("val"), torch.Tensor | list | tuple)]
        if all(i in weights or i in derived for i in inputs):
            derived.add(node)
    return derived


def _recompute(graph: torch.fx.Graph, number: int, nodes: set[torch.fx.Node], returned: set[torch.fx.Node],
               forward: set[torch.fx.Node], loss: torch.fx.Node) -> Region:
    """The backward's reads of the region's inner values (not those it returns, nor random ones) from copies."""
    inner = {n for n in nodes if n not in returned and not _random(n)}
    readers: dict[torch.fx.Node, list[torch.fx.Node]] = {}
    for node in inner:
        for user in node.users:
            if user not in forward and user.op == "call_function":
                readers.setdefault(node, []).append(user)
    needed: set[torch.fx.Node] = set()
    stack = list(readers)
    while stack:
        node = stack.pop()
        if node not in needed:
            needed.add(node)
            stack.extend(i for i in node.all_input_nodes if i in inner)
    ordered = [n for n in graph.nodes if n in needed]
    copies: dict[torch.fx.Node, torch.fx.Node] = {}
    if ordered:
        # Before the first reader after the loss: the backward proper (an earlier reader, a detach of an inner
        # value, is moved after the copies by the topological sort).
        reading = {u for users in readers.values() for u in users}
        after_loss = [n for n in graph.nodes if n in reading and n not in forward and n > loss]  # fx orders nodes
        first = after_loss[0] if after_loss else next(n for n in graph.nodes if n in reading)
        with graph.inserting_before(first):
            for node in ordered:
                copy = graph.node_copy(node, lambda n: copies.get(n, n))
                copy.meta[RECOMPUTE_KEY] = number
                copies[node] = copy
        for node, users in readers.items():
            for user in users:
                user.replace_input_with(node, copies[node])
    return Region(number, sorted(n.name for n in nodes), [c.name for c in copies.values()])


def recompute_summary(regions: list[Region]) -> dict[str, Any]:
    """The `train` attribute's figures: how many regions, and how many forward nodes the backward recomputes."""
    return {"checkpoint_regions": len(regions),
            "recomputed_nodes": sum(len(r.recomputed) for r in regions)} if regions else {}
