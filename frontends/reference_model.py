"""The reference model for validation, built cheaply: its numbers need only be reproducible, not trained-looking.

Building a full-size model runs every layer's initialiser (`kaiming_uniform_` on each 16384×16384 weight of
a wide MLP costs seconds), and those values are thrown away by any seeded comparison anyway. Here the
model is built with `torch.nn.init`'s functions switched off, and then every floating-point parameter is
filled with seeded normal values scaled by 1/sqrt(fan-in), so that activations stay near unit size through
deep stacks. Buffers keep what the constructor computed (masks, position tables, running statistics): they
are part of the program, not weights.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from unittest import mock

import torch

# Fills of more elements than this draw from one seeded generator in chunks (memory stays bounded).
_CHUNK = 1 << 24


def _init_functions() -> list[str]:
    return [n for n in dir(torch.nn.init) if n.endswith("_") and not n.startswith("_")
            and callable(getattr(torch.nn.init, n))]


@contextlib.contextmanager
def no_layer_init() -> Iterator[None]:
    """While active, `torch.nn.init.*_` return their tensor untouched (layers call them by attribute, so
    patching the module is enough)."""
    with contextlib.ExitStack() as stack:
        for name in _init_functions():
            stack.enter_context(mock.patch.object(torch.nn.init, name, lambda tensor, *a, **k: tensor))
        yield


def _fill_normal(t: torch.Tensor, std: float, gen: torch.Generator) -> None:
    flat = t.data.view(-1) if t.is_contiguous() else None
    if flat is None or flat.numel() <= _CHUNK:
        t.data.copy_(torch.randn(t.shape, generator=gen, dtype=torch.float32).mul_(std).to(t.dtype))
        return
    for start in range(0, flat.numel(), _CHUNK):
        n = min(_CHUNK, flat.numel() - start)
        flat[start:start + n].copy_(torch.randn(n, generator=gen, dtype=torch.float32).mul_(std).to(t.dtype))


def seeded_weights(model: torch.nn.Module, seed: int) -> None:
    """Every floating-point parameter ~ N(0, 1/fan-in), from one generator seeded with `seed`, in the
    order `named_parameters` gives (so the same model and seed give the same numbers)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, p in model.named_parameters():
            if not p.dtype.is_floating_point or p.numel() == 0:
                continue
            fan_in = math.prod(p.shape[1:]) if p.dim() >= 2 else 1
            _fill_normal(p, 1.0 / math.sqrt(max(fan_in, 1)), gen)
        for _, b in model.named_buffers():
            # A buffer an initialiser was meant to fill holds whatever memory had: make it reproducible.
            if b.dtype.is_floating_point and b.numel() and not bool(torch.isfinite(b).all()):
                _fill_normal(b, 1.0, gen)


def build_reference(make_model: Callable[[], torch.nn.Module], seed: int) -> torch.nn.Module:
    """The model built without layer initialisers, then given seeded normal weights; in its own mode (the
    translation exports it so: a batch norm in training mode uses batch statistics)."""
    torch.manual_seed(seed)
    with no_layer_init():
        model = make_model()
    seeded_weights(model, seed)
    return model
