"""Validation of solar-llm's steps at reduced sizes: a twin of the config reduced in every dimension (hidden
size, heads, key-value heads, head size, MLP width, vocabulary, experts) and in layers, built on the CPU
with seeded weights, its step translated as any torch program is and run through the IR executor against
the model (frontends/validate.py). Batch, prompt and context run small too.

The twin keeps what shapes the program: the ratio of heads to key-value heads (grouped-query attention), the
routed experts' top-k, an even head size (rotary halves), the activation, the norms and the sliding window
when it is shorter than the sizes run. It is the same code at other numbers, as the 2-layer twin priced is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from .llm_models import PHASES, LlmConfig, LlmError, _Decode, _Prefill, _StaticDecode, sliding_layers
from .reference_model import build_reference
from .scaled_reference import validate_torch
from .torch_export import translate_problem
from .torch_problem import TorchProblem, quiet_framework
from .validate import ValidationReport

HEAD_SIZE = 16
KV_HEADS = 2
WIDTH = 96  # the MLP (and each expert's) width
VOCAB = 256
EXPERTS = 4


class _FlatDecode(torch.nn.Module):
    """The decode step with the cache as separate arguments, as a KernelBench-style program takes them."""

    def __init__(self, step: torch.nn.Module) -> None:
        super().__init__()
        self.step = step

    def forward(self, ids: torch.Tensor, *cache: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.step(ids, list(cache))


class _FlatStaticDecode(torch.nn.Module):
    """The static-cache decode step with the cache as separate arguments after the positions. The step
    stores into its buffers (HF's StaticCache updates in place): it gets copies, so that the reference run
    leaves the inputs as the translation reads them (a copy is no kernel of the translation)."""

    def __init__(self, step: torch.nn.Module) -> None:
        super().__init__()
        self.step = step

    def forward(self, ids: torch.Tensor, positions: torch.Tensor, *cache: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.step(ids, positions, [c.clone() for c in cache])


@dataclass
class StepValidation:
    """What was validated: the reduced config's fields against the full config's, and the run's report."""

    phase: str
    reduced: dict[str, tuple[int, int]]  # field -> (full, reduced)
    report: ValidationReport
    sizes: dict[str, int] = field(default_factory=dict)  # batch and prompt or context, as run

    def line(self) -> str:
        r = self.report
        dims = ", ".join(f"{k} {full}→{small}" for k, (full, small) in self.reduced.items())
        status = "ok" if r.ok else f"FAILED ({r.error or 'outputs differ'})"
        run = ", ".join(f"{k} {v}" for k, v in self.sizes.items())
        return (f"{self.phase} validated at reduced sizes: {status}; max abs error {r.max_abs_error:.3g}; "
                f"{dims}; run at {run}")


def reduced_config(cfg: LlmConfig, layers: int = 2) -> tuple[Any, dict[str, tuple[int, int]]]:
    """The config with every dimension reduced (module docstring) and `layers` layers."""
    s = cfg.shape
    group = max(1, s.heads // s.kv_heads)  # query heads per key-value head, kept
    kv_heads = min(s.kv_heads, KV_HEADS)
    fields: dict[str, int] = {"num_hidden_layers": min(layers, s.layers), "num_attention_heads": kv_heads * group,
                              "num_key_value_heads": kv_heads, "head_dim": min(s.head_dim, HEAD_SIZE),
                              "vocab_size": min(s.vocab, VOCAB)}
    fields["hidden_size"] = fields["num_attention_heads"] * fields["head_dim"]
    raw = cfg.config.to_dict()
    for width in ("intermediate_size", "moe_intermediate_size", "shared_expert_intermediate_size"):
        if isinstance(raw.get(width), int):
            fields[width] = min(raw[width], WIDTH)
    for experts in ("num_local_experts", "num_experts"):
        if isinstance(raw.get(experts), int) and raw[experts] > 0:
            fields[experts] = max(min(raw[experts], EXPERTS), s.top_k)
    reduced = {k: (raw[k] if isinstance(raw.get(k), int) else getattr(s, "head_dim", 0), v)
               for k, v in fields.items()}
    merged = {**raw, **fields}
    if isinstance(merged.get("layer_types"), list):
        merged["layer_types"] = merged["layer_types"][: fields["num_hidden_layers"]]
    config = cfg.config.__class__.from_dict(merged)
    config._attn_implementation = "sdpa"
    config._experts_implementation = cfg.config._experts_implementation
    return config, {k: v for k, v in reduced.items() if v[0] != v[1]}


def validate_step(cfg: LlmConfig, phase: str = "decode", batch: int = 2, length: int = 8, seed: int = 0,
                  layers: int = 2) -> StepValidation:
    """Translates the reduced twin's step as solar-translate would and validates it against the model."""
    if phase not in PHASES:
        raise LlmError(f"unknown phase '{phase}': expected prefill or decode")
    config, reduced = reduced_config(cfg, layers)
    s = cfg.shape
    dtype = s.dtype
    static = cfg.cache == "static" and phase == "decode"
    if static and s.sliding_window and s.sliding_window > length // 2:
        # A static cache's sliding ring is run past its window, so that the step validated rolls it (HF's
        # shift of the window, lowered as the append it computes).
        config.sliding_window = max(2, length // 2)
        reduced["sliding_window"] = (s.sliding_window, config.sliding_window)

    def make_model() -> torch.nn.Module:
        from transformers import AutoModelForCausalLM

        lm = build_reference(lambda: AutoModelForCausalLM.from_config(config, torch_dtype=dtype), seed)
        if phase == "prefill":
            return _Prefill(lm, config, False, cfg.cache)
        return _FlatStaticDecode(_StaticDecode(lm, config)) if static else _FlatDecode(_Decode(lm, config))

    def make_inputs() -> list[Any]:
        gen = torch.Generator().manual_seed(seed)
        if phase == "prefill":
            return [torch.randint(0, config.vocab_size, (batch, length), generator=gen)]
        ids = torch.randint(0, config.vocab_size, (batch, 1), generator=gen)
        if static:  # P + 1 slots, or a sliding layer's ring of W: the step's first input after the ids
            slots = [config.sliding_window if ring else length + 1 for ring in sliding_layers(config)]
            cache = [torch.randn(batch, config.num_key_value_heads, n, config.head_dim, generator=gen).to(dtype)
                     for n in slots for _ in range(2)]
            return [ids, torch.arange(length), *cache]
        shape = (batch, config.num_key_value_heads, length, config.head_dim)
        cache = [torch.randn(shape, generator=gen).to(dtype) for _ in range(2 * config.num_hidden_layers)]
        return [ids, *cache]

    problem = TorchProblem(make_model, make_inputs, f"{s.model_type}_{phase}_reduced")
    with quiet_framework():
        tr = translate_problem(problem, "batch")
        report = validate_torch(problem, tr, seed, size=batch, full=True)
    length_name = "prompt" if phase == "prefill" else "context"
    return StepValidation(phase, reduced, report, {"batch": batch, length_name: length})


__all__ = ["StepValidation", "reduced_config", "validate_step"]
