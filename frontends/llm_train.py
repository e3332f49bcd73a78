"""A causal language model's training step from its Hugging Face config (`solar-llm CONFIG --phase train`,
docs/training.md): the model built on the meta device, its logits over `ids[B, S]`, the cross entropy against
`targets[B, S]` (the next token of every position: the mean over B·S tokens), the backward and the torch.optim
update, as `solar-translate --train` makes them (frontends/torch_train.py).

- **Attention.** A training step without padding attends causally over its own S tokens: the mask is the
  plain causal one, and PyTorch's SDPA computes it with `is_causal=True` (the fused kernel and its fused
  backward, which count the live pairs j ≤ i). HF builds the mask as a tensor whenever it is traced (it
  cannot know that a traced length will always equal the keys' length, nor that the positions hold no packed
  sequences), so the step is exported with `CAUSAL_ATTENTION`: HF's SDPA attention registered without a mask
  function, for which HF builds no mask and SDPA masks causally itself. That is the plain causal mask only
  without padding (the step has none), packing (its positions are 0..S-1) or a sliding window shorter than
  the prompt (refused). Validation runs the reference with HF's own `sdpa` and the mask it builds.
- **Twins.** The full-size step is priced from twins with fewer layers (bench/llm_train.py); each twin is
  exported at the asked batch and prompt (numbers: the backward flattens B·S, a product of two sizes).
- **Validation.** The config reduced in every width and to 2 layers (frontends/llm_validate.py), its step
  translated and run against PyTorch's `loss.backward()` and `optimizer.step()` at batch 2 × 8 tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .llm_config_checks import quiet_transformers
from .llm_families import attention_implementation
from .llm_models import LlmConfig, LlmError, build_model
from .reference_model import build_reference
from .torch_problem import TorchProblem, TorchTranslation, quiet_framework
from .train_step import TrainOptions

CAUSAL_ATTENTION = "solar_causal_sdpa"
LOSS = "cross_entropy"
VALIDATION_BATCH, VALIDATION_PROMPT = 2, 8


class CausalLmLogits(torch.nn.Module):
    """forward(ids) → the logits of every position (no cache): what the training step's loss reads."""

    def __init__(self, lm: torch.nn.Module) -> None:
        super().__init__()
        self.lm = lm

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.lm(input_ids=ids, use_cache=False).logits


def register_causal_attention() -> None:
    """`CAUSAL_ATTENTION` in HF's attention registry: its SDPA attention, with no mask function of its own,
    so that HF builds no mask (as for an attention backend that masks by itself) and SDPA runs with
    `is_causal=True` (idempotent)."""
    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    AttentionInterface.register(CAUSAL_ATTENTION, sdpa_attention_forward)


def check_trainable(cfg: LlmConfig, prompt: int) -> None:
    """What the training step can price: a config (not a KernelBench-style file) whose attention is HF's SDPA
    over a plain causal mask at this prompt (no sliding window shorter than it: its mask is no causal one)."""
    if cfg.source is not None:
        raise LlmError("--phase train takes a Hugging Face config (a KernelBench-style file's training step: "
                       "solar-translate FILE --train)")
    if attention_implementation(cfg.config) != "sdpa":
        raise LlmError(f"{cfg.path}: --phase train prices SDPA attention; this model's attention is eager "
                       "(its scores are changed before the softmax, as soft-capping does), not supported yet")
    window = cfg.shape.sliding_window
    if window is not None and window < prompt:
        raise LlmError(f"{cfg.path}: --phase train at prompt {prompt}: the sliding window ({window}) masks more "
                       "than the causal mask there, not supported yet (a prompt up to the window is)")


def causal_config(config: Any) -> Any:
    """A copy of `config` whose attention is `CAUSAL_ATTENTION`."""
    import copy

    register_causal_attention()
    out = copy.deepcopy(config)
    out._attn_implementation = CAUSAL_ATTENTION
    return out


def step_problem(config: Any, dtype: torch.dtype, batch: int, prompt: int, name: str,
                 build: Callable[[], torch.nn.Module] | None = None, seed: int = 0) -> TorchProblem:
    """The problem the training step differentiates: the logits of `ids`, then (the targets) the next
    tokens, both (batch, prompt) token ids drawn with `seed` in the vocabulary."""

    def make_model() -> torch.nn.Module:
        from transformers import AutoModelForCausalLM

        with quiet_transformers():
            lm = build() if build is not None else AutoModelForCausalLM.from_config(config, dtype=dtype)
        return CausalLmLogits(lm.train())

    def make_inputs() -> list[torch.Tensor]:
        gen = torch.Generator().manual_seed(seed)
        return [torch.randint(0, config.vocab_size, (batch, prompt), generator=gen) for _ in range(2)]

    return TorchProblem(make_model, make_inputs, name)


def translate_twin(cfg: LlmConfig, layers: int, batch: int, prompt: int, optimizer: str) -> TorchTranslation:
    """The training step of the `layers`-layer twin at full width, exported on the meta device at `batch` ×
    `prompt` tokens (numbers). Raises LlmError for a step that does not translate."""
    from .diagnostics import SourceError, TranslationError
    from .lowering.core import LoweringError
    from .torch_train import translate_train

    config = causal_config(cfg.with_layers(layers))
    problem = step_problem(config, cfg.shape.dtype, batch, prompt, f"{cfg.shape.model_type}_train",
                           build=lambda: build_model(config, cfg.shape.dtype, cfg.path))
    try:
        with quiet_framework(), quiet_transformers():
            return translate_train(problem, 1, TrainOptions(optimizer, LOSS), "none")
    except (TranslationError, LoweringError, SourceError) as err:
        # An export or backward that fails at the model's line (SourceError) is said as the other failures.
        text = err.format() if hasattr(err, "format") else str(err)
        first = (text.strip().splitlines() or [""])[0].removeprefix("error: ")
        raise LlmError(f"{cfg.path}: the training step did not translate: {first}") from None


def validate_train_step(cfg: LlmConfig, optimizer: str, seed: int = 0) -> str:
    """The step of the config reduced in every width (2 layers) translated with the causal attention and run
    against HF's own model (its `sdpa` mask) stepped by PyTorch: one line; a mismatch is an LlmError."""
    from .llm_validate import reduced_config
    from .torch_train import translate_train, validate_train

    config, reduced = reduced_config(cfg, 2)
    dtype = cfg.shape.dtype
    name = f"{cfg.shape.model_type}_train_reduced"
    options = TrainOptions(optimizer, LOSS)
    causal = causal_config(config)
    translated = step_problem(causal, dtype, VALIDATION_BATCH, VALIDATION_PROMPT, name)

    def hf_model() -> torch.nn.Module:
        from transformers import AutoModelForCausalLM

        return build_reference(lambda: AutoModelForCausalLM.from_config(config, dtype=dtype), seed)

    reference = step_problem(config, dtype, VALIDATION_BATCH, VALIDATION_PROMPT, name, build=hf_model, seed=seed)
    with quiet_framework(), quiet_transformers():
        tr = translate_train(translated, 1, options, "none")
        report = validate_train(reference, 1, options, tr, seed, VALIDATION_BATCH, True)
    dims = ", ".join(f"{k} {full}→{small}" for k, (full, small) in reduced.items())
    line = (f"train ({optimizer}, {LOSS}) validated at reduced sizes against loss.backward() and "
            f"optimizer.step(): {'ok' if report.ok else 'FAILED'}; {len(report.outputs)} outputs, max abs error "
            f"{report.max_abs_error:.3g}; {dims}; run at batch {VALIDATION_BATCH}, prompt {VALIDATION_PROMPT}")
    if not report.ok:
        raise LlmError(f"{cfg.path}: {line}: {report.summary().splitlines()[0]}")
    return line


__all__ = ["CAUSAL_ATTENTION", "CausalLmLogits", "causal_config", "check_trainable", "register_causal_attention",
           "step_problem", "translate_twin", "validate_train_step"]
