"""What the Hugging Face files of the corpus share: a model built from a configuration alone (no weights), its
inputs passed by name, one output read off the result. Not a corpus program itself (its name starts with _)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch


def hf_model(config_cls: Any, model_cls: Any, config: dict, inputs: Sequence[str], output: str = "last_hidden_state",
             attention: str | None = "eager", **call: Any) -> type[torch.nn.Module]:
    """A KernelBench-style `Model` class: `model_cls(config_cls(**config))`, called with its inputs named
    `inputs` (and the keyword arguments `call`), returning the result's `output`."""

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            cfg = config_cls(**config)
            if attention is not None:
                cfg._attn_implementation = attention
            self.net = model_cls(cfg).eval()

        def forward(self, *args: torch.Tensor) -> torch.Tensor:
            return getattr(self.net(**dict(zip(inputs, args, strict=True)), **call), output)

    return Model


def token_ids(vocab: int, batch: int = 2, seq: int = 8) -> list[torch.Tensor]:
    return [torch.randint(0, vocab, (batch, seq))]


def dead_attention_macs(batch: int, heads: int, head_dim: int, seq: int, layers: int = 1,
                        window: int | None = None) -> int:
    """The MACs of a causal (or sliding-window causal) attention's two products, Q·Kᵀ and P·V, over the key
    positions its mask removes: FlopCounterMode counts the full square, SOLAR the live pairs only (a bound
    counts the work a program needs). Counted by enumerating the mask, not by its closed form."""
    dead = sum(1 for i in range(seq) for j in range(seq) if j > i or (window is not None and i - j >= window))
    return layers * batch * heads * dead * head_dim * 2
