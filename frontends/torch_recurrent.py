"""Recurrent ops stay one node, and cost nothing, under `torch.export` (issue 26).

Export's training IR keeps `aten.lstm` / `aten.gru` / `aten.rnn_tanh` / `aten.rnn_relu` whole in the
graph, but to give the node its output shapes it runs the op on fake tensors, and the op's Autograd
kernel there is torch's Python decomposition: one cell per time step and layer, ~56,000 fake ops for a
2-layer LSTM over 512 steps (110 s), and a Python loop over `range(T)` that fixes the sequence length.
Inside `recurrent_ops_whole()`, that kernel answers fake inputs with empty outputs of the right shapes
(symbolic where the input's are); real tensors still run torch's own kernel. The lowering
(`lowering/recurrent.py`) turns the node into a `solar.for` over time.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch._C import DispatchKey
from torch._subclasses.fake_tensor import is_fake

RECURRENT_OPS = ("lstm", "gru", "rnn_tanh", "rnn_relu")


def _shapes_only(original: Callable[..., Any]) -> Callable[..., Any]:
    """The op's outputs for fake inputs, without running it: the sequence (the input's shape with the last
    dim the directions × the hidden or projected size of the initial state) and the final states (the
    initial states' shapes)."""

    def kernel(input: torch.Tensor, hx: Any, params: Any, has_biases: bool, num_layers: int, dropout: float,
               train: bool, bidirectional: bool, batch_first: bool) -> Any:
        states = list(hx) if isinstance(hx, list | tuple) else [hx]
        if not is_fake(input):
            return original(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
        directions = 2 if bidirectional else 1
        out = input.new_empty((*input.shape[:-1], directions * states[0].shape[-1]))
        finals = [h.new_empty(h.shape) for h in states]
        return (out, *finals)

    return kernel


# The keys torch registers the decomposition under: the Python dispatcher picks one by the tensors' device
# (the meta device reaches Autograd's, the CPU CompositeImplicitAutograd's).
_KEYS = (DispatchKey.Autograd, DispatchKey.CompositeImplicitAutograd, DispatchKey.Meta)


@contextlib.contextmanager
def recurrent_ops_whole() -> Iterator[None]:
    """While active, the recurrent ops' `.input` overloads give fake tensors their output shapes directly."""
    ops = [getattr(torch.ops.aten, name).input for name in RECURRENT_OPS]
    saved = [(op, key, op.py_kernels[key]) for op in ops for key in _KEYS if key in op.py_kernels]
    for op, key, original in saved:
        op.py_kernels[key] = _shapes_only(original)
        op._dispatch_cache.clear()
    try:
        yield
    finally:
        for op, key, original in saved:
            op.py_kernels[key] = original
            op._dispatch_cache.clear()
