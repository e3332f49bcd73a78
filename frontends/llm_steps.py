"""The two steps a server runs, as modules torch.export can trace: a prefill against an empty cache, and a
decode against a cache given per layer (dynamic, or static with each layer's room), over HF's model
(frontends/llm_models.py builds and exports them)."""

from __future__ import annotations

from typing import Any

import torch

from .llm_families import kv_broadcast, returned_cache

_UNBOUNDED = 1 << 62  # a static cache's room before each layer's is set: a sliding layer keeps its window


def _kept_heads(t: torch.Tensor, copies: int) -> torch.Tensor:
    """The key-value heads an engine keeps of a cache tensor HF broadcast `copies` times (`kv_broadcast`):
    the first head of each group (a group's heads are the same values)."""
    return t if copies == 1 else t[:, ::copies]


def _broadcast_heads(t: torch.Tensor, copies: int) -> torch.Tensor:
    """Kept heads as HF's broadcast cache holds them: each head `copies` times, a group's copies adjacent."""
    if copies == 1:
        return t
    b, kv, p, d = t.shape
    return t[:, :, None].expand(b, kv, copies, p, d).reshape(b, kv * copies, p, d)


def keep_heads_in(layer: Any, copies: int) -> None:
    """A static cache layer that holds the key-value heads an engine keeps though HF's code hands it each
    head `copies` times (`kv_broadcast`: Falcon-40B's 8 heads as 128): it stores the first of each group,
    and gives the attention the broadcast heads as views of its buffers. Its buffers, what a step reads of
    them and what it writes, are the kept heads' bytes."""
    if copies == 1:
        return
    update = layer.update

    def kept_update(keys: torch.Tensor, values: torch.Tensor, *args: Any, **kwargs: Any
                    ) -> tuple[torch.Tensor, torch.Tensor]:
        stored = update(_kept_heads(keys, copies), _kept_heads(values, copies), *args, **kwargs)
        return _broadcast_heads(stored[0], copies), _broadcast_heads(stored[1], copies)

    layer.update = kept_update


class PrefillStep(torch.nn.Module):
    def __init__(self, lm: torch.nn.Module, config: Any, all_logits: bool, cache: str = "dynamic") -> None:
        super().__init__()
        self.lm, self.config, self.keep, self.cache = lm, config, 0 if all_logits else 1, cache
        self.copies = kv_broadcast(config, config.num_attention_heads)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
        from transformers import DynamicCache, StaticCache

        if self.cache == "static":
            # A fresh static cache is zeros of room for the prompt (HF allocates it on the first update);
            # the positions are given, so the mask is a function of the sizes, not of the cache's counter.
            prompt = ids.shape[1]
            past: Any = StaticCache(config=self.config, max_cache_len=_UNBOUNDED)
            for layer in past.layers:
                # A sliding layer's ring has its window's W slots (HF's min(W, room)): it keeps the last W of
                # a longer prompt. Chosen here, the choice is a guard on the prompt, not a Min(W, S) size.
                window = layer.max_cache_len if getattr(layer, "is_sliding", False) else None
                layer.max_cache_len = window if window is not None and prompt > window else prompt
                keep_heads_in(layer, self.copies)  # its buffers are made on its first update: kept heads
            positions = torch.arange(prompt, device=ids.device).unsqueeze(0)
        else:
            past, positions = DynamicCache(config=self.config), None
        out = self.lm(input_ids=ids, past_key_values=past, use_cache=True, logits_to_keep=self.keep,
                      position_ids=positions)
        cache = returned_cache(out)
        copies = 1 if self.cache == "static" else self.copies  # a static cache's buffers hold the kept heads
        return (out.logits, *[_kept_heads(t, copies) for layer in cache.layers for t in (layer.keys, layer.values)])


class DecodeStep(torch.nn.Module):
    """A decode step against HF's `DynamicCache`, given each layer's cached keys and values as an engine
    keeps them (`kv_heads`; HF's broadcast heads are made from them, as views: `kv_broadcast`)."""

    def __init__(self, lm: torch.nn.Module, config: Any) -> None:
        super().__init__()
        self.lm, self.config = lm, config
        self.copies = kv_broadcast(config, config.num_attention_heads)

    def forward(self, ids: torch.Tensor, cache: list[torch.Tensor]) -> tuple[torch.Tensor, ...]:
        from transformers import DynamicCache

        # One argument per layer's keys and values (k0, v0, k1, ...): each is a buffer of its own.
        past = DynamicCache(config=self.config)
        for layer in range(len(cache) // 2):
            past.update(*(_broadcast_heads(t, self.copies) for t in cache[2 * layer:2 * layer + 2]), layer)
        out = self.lm(input_ids=ids, past_key_values=past, use_cache=True, logits_to_keep=1)
        new = [_kept_heads(t[:, :, -1:], self.copies) for layer in returned_cache(out).layers
               for t in (layer.keys, layer.values)]
        return (out.logits, *new)


class StaticDecodeStep(torch.nn.Module):
    """A decode step against HF's `StaticCache` holding `P` tokens. P is the length of `positions` (the
    cached tokens' positions, `arange(P)`: a shape that is never read), so the write position and the mask
    are functions of a size, not of data.

    - A full-attention layer's buffers have `L` ≥ P + 1 slots: the new token's keys and values are stored at
      position P (`index_copy_`), and the mask keeps the attention to positions ≤ P.
    - A sliding-window layer's buffers are a ring of W slots (`StaticSlidingWindowLayer`). Below W tokens
      it fills as above; from W on, HF shifts the window by one and stores the new token in the last slot,
      which the lowering reads as the append it is (frontends/torch_ring.py: the last W − 1 tokens read,
      one written). The branch is a guard on P: an export holds for P < W or for P ≥ W, not both
      (`PhaseExport.minimums` and `maximums`)."""

    def __init__(self, lm: torch.nn.Module, config: Any) -> None:
        super().__init__()
        self.lm, self.config = lm, config
        self.copies = kv_broadcast(config, config.num_attention_heads)

    def forward(self, ids: torch.Tensor, positions: torch.Tensor, cache: list[torch.Tensor]
                ) -> tuple[torch.Tensor, ...]:
        from transformers import StaticCache

        context = positions.shape[0]
        # A number here (each layer's room is set from its buffers below): a symbolic one would put a guard
        # between the sliding layers' window and the full layers' slots.
        past = StaticCache(config=self.config, max_cache_len=1)
        rolls = []
        for index, layer in enumerate(past.layers):
            # The state a cache holding `context` tokens has (what lazy initialization and updates leave).
            layer.keys, layer.values = cache[2 * index], cache[2 * index + 1]
            layer.max_cache_len = layer.keys.shape[2]
            layer.is_initialized = True
            layer.batch_size, layer.num_heads = layer.keys.shape[:2]
            layer.k_head_dim, layer.v_head_dim = layer.keys.shape[-1], layer.values.shape[-1]
            layer.cumulative_length = torch.tensor(context)
            sliding = bool(getattr(layer, "is_sliding", False))
            full = sliding and context >= layer.max_cache_len
            if sliding:
                layer.cumulative_length_int = context
            # The rolled window's store index, `tensor([-1])`, made on the CPU so that it is a constant with
            # a value (on meta it would be an input of unknown contents).
            layer.device = torch.device("cpu") if full else ids.device
            keep_heads_in(layer, self.copies)  # the buffers given hold the kept heads (`kv_heads`)
            rolls.append(full)
        where = torch.arange(context, context + 1, device=ids.device).unsqueeze(0)
        out = self.lm(input_ids=ids, past_key_values=past, use_cache=True, logits_to_keep=1, position_ids=where)
        new = [t[:, :, -1:] if rolled else t[:, :, context:context + 1]
               for layer, rolled in zip(returned_cache(out).layers, rolls, strict=True)
               for t in (layer.keys, layer.values)]
        return (out.logits, *new)
