"""A ring buffer's one-token shift, recognised in an exported graph and rewritten as the append it computes.

Hugging Face's `StaticSlidingWindowLayer`, once its W slots are full, stores a decode step's token as

    rolled = roll(cache, [-1], [d])              # every slot one to the left
    index_put_(slice(rolled), [.., tensor([-1])], new)   # the new token into the last slot
    copy_(cache, rolled)                         # back into the cache; readers read this node

which is, element for element, `cat(cache[.., 1:W, ..], new)` along `d`: the last W − 1 tokens and the
new one. A serving engine keeps such a window as a ring (it writes one slot and reads the window in place)
and never copies it, so the rewrite gives the cost model the append it prices that way (an append onto a
cache argument reads the W − 1 live slots once and writes only the new token: frontends/llm_models.py
`mark_in_place`). The copy HF makes is not a cost of the computation and is never priced.

The rewrite is exact (the same values) and applies only to this pattern: a shift of −1 along one dimension,
the store at index −1 (a constant tensor) of a value one slot long there, and the copy back into the same
tensor. Anything else is left as it was.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch
import torch.fx

_ATEN = torch.ops.aten
_SLICE_END = 9223372036854775807  # export's "to the end"


def rewrite_ring_appends(ep: torch.export.ExportedProgram) -> int:
    """Rewrites every ring shift of `ep`'s graph (module docstring) in place; returns how many."""
    graph = ep.graph
    rewritten = 0
    for copy in [n for n in graph.nodes if n.op == "call_function" and n.target is _ATEN.copy_.default]:
        match = _match(ep, copy)
        if match is None:
            continue
        buffer, dim, new, dead = match
        fake = buffer.meta["val"]
        mode = torch._guards.detect_fake_mode([fake])
        with graph.inserting_before(copy):
            window = graph.call_function(_ATEN.slice.Tensor, (buffer, dim, 1, _SLICE_END))
            append = graph.call_function(_ATEN.cat.default, ([window, new], dim))
        with mode if mode is not None else contextlib.nullcontext():
            window.meta["val"] = _ATEN.slice.Tensor(fake, dim, 1, _SLICE_END)
            append.meta["val"] = _ATEN.cat.default([window.meta["val"], new.meta["val"]], dim)
        for node in (window, append):
            node.meta["stack_trace"] = copy.meta.get("stack_trace")
        copy.replace_all_uses_with(append)
        for node in dead:  # users before what they use
            if not node.users:
                graph.erase_node(node)
        rewritten += 1
    if rewritten:
        ep.graph_module.recompile()
    return rewritten


def _match(ep: torch.export.ExportedProgram, copy: torch.fx.Node
           ) -> tuple[torch.fx.Node, int, torch.fx.Node, list[torch.fx.Node]] | None:
    """(the cache, the dimension, the new token's value, the nodes left dead) where `copy` ends a ring
    shift, else None."""
    dest, source = copy.args[0], copy.args[1] if len(copy.args) > 1 else None
    if not isinstance(dest, torch.fx.Node) or not isinstance(source, torch.fx.Node):
        return None
    # The copied tensor is the rolled one, or the store's result (`index_put_` returns its destination),
    # through whole slices (`x[:, :, i]` begins with one where a dimension before is symbolic).
    rolled = source.args[0] if source.target is _ATEN.index_put_.default and source.args else source
    while isinstance(rolled, torch.fx.Node) and _whole_slice(rolled):
        rolled = rolled.args[0]
    if not isinstance(rolled, torch.fx.Node) or rolled.target is not _ATEN.roll.default or rolled.args[0] is not dest:
        return None
    shifts = _ints(rolled.args[1] if len(rolled.args) > 1 else rolled.kwargs.get("shifts"))
    dims = _ints(rolled.args[2] if len(rolled.args) > 2 else rolled.kwargs.get("dims"))
    fake = dest.meta.get("val")
    if shifts != [-1] or dims is None or len(dims) != 1 or not isinstance(fake, torch.Tensor):
        return None
    rank = fake.dim()
    dim = dims[0] % rank if rank else 0
    # The rolled tensor, its whole slices and the one store into them: read by nothing else but the copy.
    views = [rolled]
    while True:
        more = [u for u in views[-1].users if _whole_slice(u)]
        if len(more) != 1:
            break
        views.append(more[0])
    stores = [u for v in views for u in v.users if u.target is _ATEN.index_put_.default and u.args[0] is v]
    if len(stores) != 1:
        return None
    store = stores[0]
    if any(u not in (*views, store, copy) for v in (*views, store) for u in v.users):
        return None
    indices, new = store.args[1], store.args[2]
    accumulate = store.args[3] if len(store.args) > 3 else store.kwargs.get("accumulate", False)
    if accumulate or not isinstance(indices, list | tuple) or not isinstance(new, torch.fx.Node):
        return None
    index_nodes = [(k, i) for k, i in enumerate(indices) if i is not None]
    if len(index_nodes) != 1 or index_nodes[0][0] != dim or not _is_last(ep, index_nodes[0][1]):
        return None
    value = new.meta.get("val")
    want = list(fake.shape)
    want[dim] = 1
    if not isinstance(value, torch.Tensor) or value.dim() != rank or value.dtype != fake.dtype or any(
            not _same(a, b) for a, b in zip(value.shape, want, strict=True)):
        return None
    # Nothing else may read the cache from the roll on: between the roll and the copy it would see the old
    # window, after the copy the new one (export points later readers at the copy's result, not the cache).
    order = {n: k for k, n in enumerate(ep.graph.nodes)}
    if any(order[u] > order[rolled] for u in dest.users if u not in (rolled, copy)):
        return None
    index = index_nodes[0][1]
    chain = [index] + ([index.args[0]] if index.target is _ATEN.detach_.default else [])
    return dest, dim, new, [copy, store, *reversed(views), *chain]


def _ints(value: Any) -> list[int] | None:
    if isinstance(value, int):
        return [value]
    if isinstance(value, list | tuple) and all(isinstance(v, int) for v in value):
        return list(value)
    return None


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # a symbolic size export cannot decide: not the pattern
        return False


def _whole_slice(node: torch.fx.Node) -> bool:
    """`slice(x, d, 0, end)`: all of `x` (how `x[:, :, index]` begins under export)."""
    if node.target is not _ATEN.slice.Tensor:
        return False
    args = list(node.args) + [None] * 4
    start, end, step = args[2], args[3], args[4]
    return start in (0, None) and end in (_SLICE_END, None) and step in (1, None)


def _is_last(ep: torch.export.ExportedProgram, node: Any) -> bool:
    """The index is a constant tensor holding [-1] (through export's `detach_(lift_fresh_copy(...))`)."""
    while isinstance(node, torch.fx.Node) and node.op == "call_function" and node.target in (
            _ATEN.detach_.default, _ATEN.lift_fresh_copy.default, _ATEN.detach.default):
        node = node.args[0]
    if not isinstance(node, torch.fx.Node) or node.op != "placeholder":
        return False
    spec = next((s for s in ep.graph_signature.input_specs if s.arg.name == node.name), None)
    if spec is None or spec.target is None:
        return False
    value = ep.constants.get(str(spec.target))
    if not isinstance(value, torch.Tensor) or value.is_meta or value.numel() != 1 or value.dim() != 1:
        return False
    return int(value.reshape(()).item()) == -1
