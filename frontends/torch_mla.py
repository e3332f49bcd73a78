"""Multi-head latent attention (DeepSeek-V2/V3) in its absorbed form: the least work of a decode step.

Hugging Face's DeepSeek attention expands the cached latent `c[B, 1, P, r]` into every head's keys and
values at every step (`expand_kv`):

    kv = linear(c, W)                        # W[H·(dn + dv), r]: P·r·H·(dn + dv) MACs per step
    k_nope, v = split(transpose(view(kv, [B, P, H, dn + dv]), 1, 2), [dn, dv], -1)
    k = new_empty(...); k[..., :dn].copy_(k_nope); k[..., dn:].copy_(expand(k_rot, H))
    o = sdpa(cat([q_nope, q_pe], -1), k, v, mask, scale=s)

Serving engines absorb W's up-projections into the query and the output instead (DeepSeek-V2's paper,
§2.1.3): with W_UK[h] = W[h, :dn] and W_UV[h] = W[h, dn:] (each [·, r]),

    q·k = q_nope·(W_UK c) + q_pe·k_rot = (q_nope W_UK)·c + q_pe·k_rot
    Σ_p a_p v_p = W_UV (Σ_p a_p c_p)

so `o = (sdpa(cat([q_nope W_UK, q_pe]), cat([c, k_rot]), c, mask, scale=s)) W_UVᵀ`: attention over the
latent itself, shared by every head (one head expanded), with no product over the P cached tokens beyond
attention's own. For a decode step (one query per sequence) this is the least work: ≈ 4.4e9 MACs for
DeepSeek-V2-Lite at P = 4,096 against 2.35e11 expanded. The values are the same (up to rounding).
`absorb_latent_attention` rewrites every attention of this form in an exported graph; any other form is
left as it was.
"""

from __future__ import annotations

import contextlib
import operator
from typing import Any

import torch
import torch.fx

from .torch_grouped_experts import node_op

_ATEN = torch.ops.aten
_END = 9223372036854775807


def absorb_latent_attention(ep: torch.export.ExportedProgram) -> int:
    """Rewrites every expanded latent attention of `ep`'s graph (module docstring) into its absorbed form;
    returns how many."""
    graph = ep.graph
    done = 0
    for sdpa in [n for n in graph.nodes if node_op(n) == "aten::scaled_dot_product_attention"]:
        match = _match(sdpa)
        if match is None:
            continue
        _absorb(graph, sdpa, *match)
        done += 1
    if done:
        graph.eliminate_dead_code()
        ep.graph_module.recompile()
    return done


def _dim(value: Any, rank: int) -> Any:
    return value % rank if isinstance(value, int) else None


def _match(sdpa: torch.fx.Node) -> tuple[Any, ...] | None:
    """(q_nope, q_pe, latent, k_rot, W, dn, dv) where `sdpa` attends over an expanded latent, else None."""
    query, key, value = sdpa.args[:3]
    if not all(isinstance(a, torch.fx.Node) for a in (query, key, value)):
        return None
    if node_op(query) != "aten::cat" or _dim(query.args[1] if len(query.args) > 1 else 0, 4) != 3:
        return None
    q_parts = query.args[0]
    if not isinstance(q_parts, list | tuple) or len(q_parts) != 2:
        return None
    # The values: the second part of a split of the expanded latent.
    if value.target is not operator.getitem or value.args[1] != 1:
        return None
    split = value.args[0]
    if node_op(split) != "aten::split_with_sizes" or _dim(split.args[2] if len(split.args) > 2 else 0, 4) != 3:
        return None
    dn, dv = split.args[1]
    transpose, = split.args[:1]
    if node_op(transpose) != "aten::transpose" or sorted(_dim(d, 4) for d in transpose.args[1:3]) != [1, 2]:
        return None
    view = transpose.args[0]
    if node_op(view) not in ("aten::view", "aten::reshape"):
        return None
    linear = view.args[0]
    if node_op(linear) != "aten::linear" or (len(linear.args) > 2 and linear.args[2] is not None):
        return None
    latent, weight = linear.args[:2]
    k_nope = next((u for u in split.users if u.target is operator.getitem and u.args[1] == 0), None)
    # The keys: a fresh tensor written with k_nope in its first dn features and the expanded k_rot after.
    if node_op(key) != "aten::new_empty" or k_nope is None:
        return None
    writes: dict[int, torch.fx.Node] = {}
    for use in key.users:
        if use is sdpa:
            continue
        if node_op(use) != "aten::slice" or _dim(use.args[1], 4) != 3 or len(use.users) != 1:
            return None
        copy = next(iter(use.users))
        if node_op(copy) != "aten::copy_" or copy.args[0] is not use or copy.users:
            return None
        writes[use.args[2]] = copy.args[1]  # type: ignore[index]
    rot = writes.get(dn)
    if writes.get(0) is not k_nope or rot is None or node_op(rot) != "aten::expand":
        return None
    k_rot = rot.args[0]
    lv, kv, wv = (x.meta.get("val") for x in (latent, k_rot, weight))
    if not all(isinstance(v, torch.Tensor) for v in (lv, kv, wv)) or lv.dim() != 4 or kv.dim() != 4:
        return None
    if lv.shape[1] != 1 or kv.shape[1] != 1 or not isinstance(wv.shape[0], int) or wv.shape[0] % (dn + dv):
        return None
    return q_parts[0], q_parts[1], latent, k_rot, weight, dn, dv


def _absorb(graph: torch.fx.Graph, sdpa: torch.fx.Node, q_nope: torch.fx.Node, q_pe: torch.fx.Node,
            latent: torch.fx.Node, k_rot: torch.fx.Node, weight: torch.fx.Node, dn: int, dv: int) -> None:
    w = weight.meta["val"]
    heads, rank = w.shape[0] // (dn + dv), w.shape[1]
    mode = torch._guards.detect_fake_mode([w])
    scale = sdpa.kwargs.get("scale")
    if scale is None:  # torch's default, of the query's original width
        scale = (dn + q_pe.meta["val"].shape[-1]) ** -0.5

    def call(target: Any, *args: Any, **kwargs: Any) -> torch.fx.Node:
        node = graph.call_function(target, args, kwargs)
        vals = [a.meta["val"] if isinstance(a, torch.fx.Node) else
                [x.meta["val"] if isinstance(x, torch.fx.Node) else x for x in a] if isinstance(a, list) else a
                for a in args]
        node.meta["val"] = target(*vals, **kwargs)
        node.meta["stack_trace"] = sdpa.meta.get("stack_trace")
        return node

    with graph.inserting_before(sdpa), mode if mode is not None else contextlib.nullcontext():
        per_head = call(_ATEN.view.default, weight, [heads, dn + dv, rank])
        w_uk = call(_ATEN.slice.Tensor, per_head, 1, 0, dn)
        w_uv = call(_ATEN.slice.Tensor, per_head, 1, dn, dn + dv)
        q_latent = call(_ATEN.matmul.default, q_nope, w_uk)
        query = call(_ATEN.cat.default, [q_latent, q_pe], -1)
        keys = call(_ATEN.expand.default, call(_ATEN.cat.default, [latent, k_rot], -1), [-1, heads, -1, -1])
        values = call(_ATEN.expand.default, latent, [-1, heads, -1, -1])
        kwargs = {**sdpa.kwargs, "scale": scale}
        attended = call(_ATEN.scaled_dot_product_attention.default, query, keys, values, *sdpa.args[3:], **kwargs)
        out = call(_ATEN.matmul.default, attended, call(_ATEN.transpose.int, w_uv, 1, 2))
    sdpa.replace_all_uses_with(out)
    key = sdpa.args[1]
    graph.erase_node(sdpa)
    for use in list(key.users):  # the writes into the expanded keys, then the keys (no reader is left)
        for copy in list(use.users):
            graph.erase_node(copy)
        graph.erase_node(use)
    graph.erase_node(key)
