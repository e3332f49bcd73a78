"""What kind of computation each decoder layer of a built model is, so that twins with fewer layers can keep
a prefix of layers that differ (DeepSeek's dense first layers, `first_k_dense_replace`; Qwen2-MoE's
`mlp_only_layers`) and scale only the repeating body (`repeating_twins` of llm_families).

A layer's kind is read from the model itself rather than from each family's fields: its modules' classes,
their parameters' and buffers' shapes and dtypes, their plain settings (a sliding window, a rotary switch),
all but the layer's own index, and the config's `layer_types` entry and the cache's sliding flag for it (an
attention's kind that no module's shape shows). Two layers of one kind compute the same at the same sizes.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import Any

import torch

# A module's own position in the stack (HF's `layer_idx`, some families' `layer_id`): no part of its kind.
_INDEX_ATTRIBUTE = re.compile(r"(^|_)(idx|index|id|number)$|^training$")
_PLAIN = (bool, int, float, str, type(None))


def decoder_layers(model: torch.nn.Module, count: int) -> torch.nn.ModuleList | None:
    """The model's stack of `count` decoder layers: the ModuleList of that length holding the most
    parameters (an encoder's or vision tower's stack, if any, is another length or smaller), or None."""
    stacks = [m for m in model.modules() if isinstance(m, torch.nn.ModuleList) and len(m) == count and count]
    if not stacks:
        return None
    return max(stacks, key=lambda m: sum(p.numel() for p in m.parameters()))


def _module_kind(name: str, module: torch.nn.Module) -> Hashable:
    tensors = tuple((n, tuple(t.shape), str(t.dtype))
                    for n, t in (*module.named_parameters(recurse=False), *module.named_buffers(recurse=False))
                    if t is not None)
    settings = tuple(sorted((k, v) for k, v in vars(module).items()
                            if not k.startswith("_") and isinstance(v, _PLAIN) and not _INDEX_ATTRIBUTE.search(k)))
    return name, type(module).__qualname__, tensors, settings


def layer_kinds(model: torch.nn.Module, config: Any, sliding: list[bool]) -> list[Hashable] | None:
    """Each decoder layer's kind (module docstring), in order, or None where the stack is not found.
    `sliding` is the cache's sliding flag per layer (llm_models.sliding_layers)."""
    count = int(config.num_hidden_layers)
    stack = decoder_layers(model, count)
    if stack is None or len(sliding) != count:
        return None
    types = config.to_dict().get("layer_types")
    types = types if isinstance(types, list) and len(types) == count else [None] * count
    return [(tuple(_module_kind(name, m) for name, m in layer.named_modules()), str(kind), slides)
            for layer, kind, slides in zip(stack, types, sliding, strict=True)]


__all__ = ["decoder_layers", "layer_kinds"]
