"""In-place ops of export's training IR lowered as their functional forms, so that a network with batch norm
in training mode (`num_batches_tracked.add_(1)`, running statistics updated by `aten.batch_norm`) or with
`ReLU(inplace=True)` is lowered without `run_decompositions`, which retraces the whole graph (on DenseNet,
a third of the translation's time).

    plan = plan_mutations(ep)           # {node: Mutation}, empty where any in-place op cannot be planned

An in-place op `op_(x, ...)` is lowered as `op(x, ...)` and, from that node on, `x` stands for the result;
where `x` is a buffer, the result is also the buffer's new value, an output of the program (as export's
functional graph returns it: after the user's outputs, in the order of the buffers). `aten.batch_norm` in
training mode with running statistics is lowered as `_native_batch_norm_legit_functional`, whose last two
results are the new running mean and variance. This is what decomposition gives, kernel for kernel.

The plan is refused (empty, and the graph decomposes as before) when aliasing could make it wrong: the
mutated tensor is a view, or is viewed by any node; the mutated tensor is a user input or a parameter; or
the signature already records mutations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

from .lowering import TORCH_LOWERINGS
from .lowering.registry import op_key

BATCH_NORM_FUNCTIONAL = "aten::_native_batch_norm_legit_functional"
_RUNNING_STATS = (3, 4)  # positions of running_mean and running_var among aten.batch_norm's arguments
_RUNNING_RESULTS = (3, 4)  # positions of the new running mean and variance among the functional form's results


@dataclass
class Mutation:
    """How one in-place node is lowered: the functional op's table key, and for each tensor it mutates,
    which of the functional form's results is its new value (None: the only result)."""

    key: str
    mutated: list[tuple[torch.fx.Node, int | None]]


def _mutated_positions(target: Any) -> list[int]:
    schema = getattr(target, "_schema", None)
    if schema is None:
        return []
    return [k for k, a in enumerate(schema.arguments) if a.alias_info is not None and a.alias_info.is_write]


def _is_view(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and bool(getattr(node.target, "is_view", False))


def _batch_norm_mutation(node: torch.fx.Node) -> Mutation | None:
    """aten.batch_norm in training mode with running statistics: the functional form, else None."""
    args = list(node.args)
    training = args[5] if len(args) > 5 else node.kwargs.get("training", False)
    stats = [args[k] if len(args) > k else None for k in _RUNNING_STATS]
    if not training or any(s is None for s in stats):
        return None
    if not all(isinstance(s, torch.fx.Node) for s in stats):
        return None
    return Mutation(BATCH_NORM_FUNCTIONAL, [(s, r) for s, r in zip(stats, _RUNNING_RESULTS, strict=True)])


def plan_mutations(ep: torch.export.ExportedProgram) -> dict[torch.fx.Node, Mutation]:
    """Every in-place node of `ep`'s graph with its functional lowering, or {} where one cannot be planned."""
    kinds = torch.export.graph_signature.OutputKind
    if any(s.kind != kinds.USER_OUTPUT for s in ep.graph_signature.output_specs):
        return {}
    buffers = {s.arg.name for s in ep.graph_signature.input_specs
               if s.kind == torch.export.graph_signature.InputKind.BUFFER}
    plan: dict[torch.fx.Node, Mutation] = {}
    for node in ep.graph.nodes:
        if node.op != "call_function":
            continue
        if op_key(node.target) == "aten::batch_norm":
            mutation = _batch_norm_mutation(node)
        elif _mutated_positions(node.target):
            positions = _mutated_positions(node.target)
            key = op_key(node.target)
            functional = key[:-1] if key.endswith("_") else ""
            if positions != [0] or functional not in TORCH_LOWERINGS or not isinstance(node.args[0], torch.fx.Node):
                return {}
            mutation = Mutation(functional, [(node.args[0], None)])
        else:
            continue
        if mutation is None:
            continue
        for target, _ in mutation.mutated:
            placeholder = target.op == "placeholder"
            if (placeholder and target.name not in buffers) or _is_view(target) or any(
                    _is_view(u) for u in target.users):
                return {}
            if not placeholder and target.op != "call_function":
                return {}
        if any(_is_view(u) for u in node.users):
            return {}
        plan[node] = mutation
    return plan


def buffer_order(ep: torch.export.ExportedProgram) -> dict[str, tuple[int, str]]:
    """Each buffer placeholder's name → (its position among the inputs, the buffer's target)."""
    kinds = torch.export.graph_signature.InputKind
    return {s.arg.name: (k, str(s.target)) for k, s in enumerate(ep.graph_signature.input_specs)
            if s.kind == kinds.BUFFER}
