"""Complex rotary embeddings, rewritten in real arithmetic in an exported graph.

SIR has no complex element type. DeepSeek-V2/V3 (and Llama's original code) rotate queries and keys as
complex numbers:

    freqs_cis = polar(ones_like(f), f) * scale            # e^{i f}, a complex tensor
    x_ = view_as_complex(x.float().reshape(..., -1, 2))    # pairs as complex numbers
    out = view_as_real(x_ * freqs_cis.unsqueeze(1)).flatten(3)

A complex tensor of shape S is held here as a real one of shape (*S, 2) (real and imaginary parts last),
which is exactly the layout `view_as_complex` reads and `view_as_real` returns, so those two are the
identity, and

    polar(r, t)      = stack([r·cos t, r·sin t], -1)
    (a + ib)(c + id) = stack([a·c − b·d, a·d + b·c], -1)
    z · s (real s)   = zr · s

`unsqueeze` gains one to a negative dimension, and device moves and clones pass through. The rewrite is
exact (the same values); a graph with any other op on a complex tensor is left as it was.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch
import torch.fx

_ATEN = torch.ops.aten
_PASS = (_ATEN.clone.default, _ATEN.alias.default, _ATEN.to.device, _ATEN.to.dtype_layout, _ATEN.to.dtype,
         _ATEN._to_copy.default, _ATEN.detach.default, _ATEN.lift_fresh_copy.default)


def _complex(node: Any) -> bool:
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return isinstance(val, torch.Tensor) and val.is_complex()


def rewrite_complex(ep: torch.export.ExportedProgram) -> int:
    """Rewrites the complex arithmetic of `ep`'s graph (module docstring) in place; returns the nodes
    rewritten (0 where there is none, or where an op on a complex tensor has no real form here)."""
    graph = ep.graph
    nodes = [n for n in graph.nodes if n.op == "call_function"
             and (_complex(n) or any(_complex(a) for a in n.all_input_nodes))]
    if not nodes or any(not _handled(n) for n in nodes):
        return 0
    fake = next(n.meta["val"] for n in nodes if isinstance(n.meta.get("val"), torch.Tensor))
    mode = torch._guards.detect_fake_mode([fake])
    real: dict[torch.fx.Node, torch.fx.Node] = {}  # a complex node -> its real (..., 2) form
    with mode if mode is not None else contextlib.nullcontext():
        for node in nodes:
            with graph.inserting_before(node):
                _rewrite(graph, node, real)
    for node in reversed(nodes):
        if not node.users:
            graph.erase_node(node)
    ep.graph_module.recompile()
    return len(nodes)


def _handled(node: torch.fx.Node) -> bool:
    t = node.target
    if t in (_ATEN.polar.default, _ATEN.view_as_complex.default, _ATEN.view_as_real.default,
             _ATEN.unsqueeze.default) or t in _PASS:
        return True
    if t is _ATEN.mul.Scalar:
        return _complex(node.args[0])
    if t is _ATEN.mul.Tensor:
        return all(_complex(a) or isinstance(a, int | float) or (isinstance(a, torch.fx.Node) and a.meta.get(
            "val") is not None and a.meta["val"].dim() == 0) for a in node.args[:2])
    return t is _ATEN._assert_tensor_metadata.default


def _call(graph: torch.fx.Graph, target: Any, args: tuple[Any, ...], like: torch.fx.Node,
          kwargs: dict[str, Any] | None = None) -> torch.fx.Node:
    """A new node of `target`, its fake value computed, its source line `like`'s."""
    node = graph.call_function(target, args, kwargs or {})
    vals = tuple(a.meta["val"] if isinstance(a, torch.fx.Node) else
                 [x.meta["val"] if isinstance(x, torch.fx.Node) else x for x in a] if isinstance(a, list) else a
                 for a in args)
    node.meta["val"] = target(*vals, **(kwargs or {}))
    node.meta["stack_trace"] = like.meta.get("stack_trace")
    return node


def _part(graph: torch.fx.Graph, z: torch.fx.Node, k: int, like: torch.fx.Node) -> torch.fx.Node:
    return _call(graph, _ATEN.select.int, (z, -1, k), like)


def _rewrite(graph: torch.fx.Graph, node: torch.fx.Node, real: dict[torch.fx.Node, torch.fx.Node]) -> None:
    t = node.target
    if t is _ATEN._assert_tensor_metadata.default:
        return  # a check of the complex tensor's metadata: it goes with it
    if t is _ATEN.view_as_complex.default:
        real[node] = node.args[0]  # type: ignore[assignment]
        return
    if t is _ATEN.view_as_real.default:
        node.replace_all_uses_with(real[node.args[0]])  # type: ignore[index]
        return
    if t is _ATEN.polar.default:
        radius, angle = node.args[0], node.args[1]
        cos = _call(graph, _ATEN.mul.Tensor, (radius, _call(graph, _ATEN.cos.default, (angle,), node)), node)
        sin = _call(graph, _ATEN.mul.Tensor, (radius, _call(graph, _ATEN.sin.default, (angle,), node)), node)
        real[node] = _call(graph, _ATEN.stack.default, ([cos, sin], -1), node)
        return
    if t is _ATEN.unsqueeze.default:
        dim = node.args[1]
        assert isinstance(dim, int)
        real[node] = _call(graph, t, (real[node.args[0]], dim - 1 if dim < 0 else dim), node)  # type: ignore[index]
        return
    if t in _PASS:
        real[node] = real[node.args[0]]  # type: ignore[index]
        return
    a, b = node.args[0], node.args[1]
    if _complex(a) and _complex(b):  # (a0 + i a1)(b0 + i b1)
        za, zb = real[a], real[b]  # type: ignore[index]
        a0, a1, b0, b1 = (_part(graph, z, k, node) for z in (za, zb) for k in (0, 1))
        re = _call(graph, _ATEN.sub.Tensor, (_call(graph, _ATEN.mul.Tensor, (a0, b0), node),
                                              _call(graph, _ATEN.mul.Tensor, (a1, b1), node)), node)
        im = _call(graph, _ATEN.add.Tensor, (_call(graph, _ATEN.mul.Tensor, (a0, b1), node),
                                              _call(graph, _ATEN.mul.Tensor, (a1, b0), node)), node)
        real[node] = _call(graph, _ATEN.stack.default, ([re, im], -1), node)
        return
    z, s = (a, b) if _complex(a) else (b, a)
    scale = _ATEN.mul.Tensor if isinstance(s, torch.fx.Node) else _ATEN.mul.Scalar
    real[node] = _call(graph, scale, (real[z], s), node)  # type: ignore[index]
