"""Validation of solar-llm's steps at reduced sizes: a twin of the config reduced in every dimension (hidden
size, heads, key-value heads, head size, MLP width, vocabulary, experts) and in layers, built on the CPU
with seeded weights, its step translated as any torch program is and run through the IR executor against
the model (frontends/validate.py). Batch, prompt and context run small too. The step is the one priced:
prefill or decode, with the cache class asked (DynamicCache or StaticCache). A KernelBench-style file's
dimensions are its code's, so it runs at its own dimensions (batch and length reduced) when its weights are
small enough to build on the CPU, and is otherwise not validated (a remark, `validate_phases`).

The twin keeps what shapes the program: the ratio of heads to key-value heads (grouped-query attention), the
routed experts' top-k, an even head size (rotary halves), the activation, the norms, and whether the sliding
window masks: a window the priced sizes pass becomes half the length run. It is the same code at other
numbers, as the 2-layer twin priced is.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from .diagnostics import TranslationError
from .llm_config_checks import quiet_transformers
from .llm_families import TOKEN_ID_FIELDS, kv_heads, twin_fields, with_fields
from .llm_mla import cache_dims
from .llm_models import PHASES, LlmConfig, LlmError, sliding_layers
from .llm_steps import DecodeStep, PrefillStep, StaticDecodeStep
from .lowering.core import LoweringError
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
# A KernelBench-style file is validated at its own dimensions: only while its weights stay this small
# (elements), so that building it on the CPU with seeded weights takes well under a second.
KERNELBENCH_MAX_PARAMS = 1 << 24
CACHE_CLASSES = {"dynamic": "DynamicCache", "static": "StaticCache"}


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
    what: str = ""  # the step's kind beside its phase: the cache class, or a KernelBench-style file

    def line(self) -> str:
        r = self.report
        dims = ", ".join(f"{k} {full}→{small}" for k, (full, small) in self.reduced.items()) \
            or ("the file's own dimensions" if self.what.startswith("KernelBench") else
                "the config's dimensions (none larger than the reduced sizes)")
        status = "ok" if r.ok else f"FAILED ({self.failure()})"
        run = ", ".join(f"{k} {v}" for k, v in self.sizes.items())
        kind = f" ({self.what})" if self.what else ""
        return (f"{self.phase}{kind} validated at reduced sizes: {status}; max abs error {r.max_abs_error:.3g}; "
                f"{dims}; run at {run}")

    def failure(self) -> str:
        """Why the run failed, in one line (the report's first failing output or its error)."""
        return self.report.summary().removeprefix("validation failed: ").splitlines()[0] if not self.report.ok \
            else ""


def reduced_config(cfg: LlmConfig, layers: int = 2, window: int | None = None
                   ) -> tuple[Any, dict[str, tuple[int, int]]]:
    """The config with every dimension reduced (module docstring) and `layers` layers; a sliding window of
    `window` tokens when given (one shorter than the sizes run, where the priced sizes pass the real one).
    Every width field of the family is reduced with the others (frontends/llm_families.py: OPT's `ffn_dim`
    and `word_embed_proj_dim`, GPT-J's `rotary_dim`), under the config's own names; what is returned beside
    the config lists those its fields changed: field -> (full, reduced)."""
    s = cfg.shape
    grouped = s.kv_heads
    group = max(1, s.heads // grouped)  # query heads per key-value head, kept
    kv_heads = min(grouped, KV_HEADS)
    head_dim = min(s.head_dim, HEAD_SIZE)
    sizes = {"num_hidden_layers": min(layers, s.layers), "num_attention_heads": kv_heads * group,
             "kv_heads": kv_heads, "head_dim": head_dim, "hidden_size": kv_heads * group * head_dim,
             "vocab_size": min(s.vocab, VOCAB), "mlp": WIDTH}
    changes = twin_fields(cfg.config, s.heads, grouped, s.head_dim, s.hidden, sizes)
    raw = cfg.config.to_dict()
    if window is not None and isinstance(raw.get("sliding_window"), int):
        changes["sliding_window"] = (raw["sliding_window"], min(raw["sliding_window"], window))
    for experts in ("num_local_experts", "num_experts"):
        if isinstance(raw.get(experts), int) and raw[experts] > 0:
            changes[experts] = (raw[experts], max(min(raw[experts], EXPERTS), s.top_k))
    fields: dict[str, Any] = {k: small for k, (_, small) in changes.items()}
    if isinstance(raw.get("layer_types"), list):
        fields["layer_types"] = raw["layer_types"][: sizes["num_hidden_layers"]]
    config = with_fields(cfg.config, fields)
    # What the twin's class kept: a field it derives from others (DeepSeek-V2's `head_dim` is its
    # qk_rope_head_dim) keeps its value whatever was asked, and the line must not say it changed.
    built = config.to_dict()
    shown = {k: (full, built.get(k, small)) for k, (full, small) in changes.items()
             if k not in TOKEN_ID_FIELDS and built.get(k, small) != full}
    return config, shown


def validate_step(cfg: LlmConfig, phase: str = "decode", batch: int = 2, length: int = 8, seed: int = 0,
                  layers: int = 2, longest: int = 0, all_logits: bool = False) -> StepValidation:
    """Translates the reduced twin's step as solar-translate would and validates it against the model.
    `longest` is the longest prompt (prefill) or context (decode) priced: where it passes the sliding
    window, the twin's window is half the length run, so that the masking priced is the masking validated."""
    if phase not in PHASES:
        raise LlmError(f"unknown phase '{phase}': expected prefill or decode")
    if cfg.source is not None:
        problem, reduced, what = _kernelbench_problem(cfg, phase, batch, length, seed), {}, "KernelBench-style file"
    else:
        window = cfg.shape.sliding_window
        # A static cache's sliding ring is always run past its window, so that the step validated rolls it
        # (HF's shift of the window, lowered as the append it computes: frontends/torch_ring.py).
        rolls = cfg.cache == "static" and phase == "decode"
        short = max(2, length // 2) if window and (longest >= window or rolls) and window > length // 2 else None
        problem, reduced = _hf_problem(cfg, phase, batch, length, seed, layers, short, all_logits)
        what = CACHE_CLASSES[cfg.cache] + (", every position's logits" if all_logits and phase == "prefill" else "")
    with quiet_framework():
        tr = translate_problem(problem, "batch")
        report = validate_torch(problem, tr, seed, size=batch, full=True)
    length_name = "prompt" if phase == "prefill" else "context"
    return StepValidation(phase, reduced, report, {"batch": batch, length_name: length}, what)


def validate_phases(cfg: LlmConfig, phases: tuple[str, ...] | list[str], longest: dict[str, int] | None = None,
                    all_logits: bool = False, verbose: bool = False) -> tuple[list[str], list[str]]:
    """Every phase's step validated: (one line per phase validated, one remark per phase that cannot be);
    `longest` the longest prompt and context priced, by phase (`validate_step`).
    A run whose outputs differ from the model's, or whose IR fails to run, is an `LlmError` (one line).
    transformers' warnings about the reduced twin (its token ids, its deprecated fields) are the twin's, not
    the user's config's: shown only when `verbose`."""
    with contextlib.nullcontext() if verbose else _quiet_library():
        return _validate_phases(cfg, phases, longest, all_logits)


@contextlib.contextmanager
def _quiet_library() -> Iterator[None]:
    with quiet_transformers(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _validate_phases(cfg: LlmConfig, phases: tuple[str, ...] | list[str], longest: dict[str, int] | None,
                     all_logits: bool) -> tuple[list[str], list[str]]:
    lines: list[str] = []
    remarks: list[str] = []
    for phase in phases:
        why_not = _why_not_validated(cfg)
        if why_not:
            remarks.append(f"{phase} not validated: {why_not}")
            continue
        try:
            check = validate_step(cfg, phase, longest=(longest or {}).get(phase, 0), all_logits=all_logits)
        except (TranslationError, LoweringError, LlmError) as err:
            # The full-size step translated (it was priced); its reduced twin did not: nothing to run.
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            remarks.append(f"{phase} not validated: the reduced step did not translate ({first})")
            continue
        if check.report.internal:
            remarks.append(f"{phase} not validated: {check.failure()}")
            continue
        if not check.report.ok:
            raise LlmError(f"{cfg.path}: {check.line()}")
        lines.append(check.line())
    return lines, remarks


def _why_not_validated(cfg: LlmConfig) -> str:
    if cfg.source is None:
        return ""
    params = sum(p.numel() for p in cfg.source.build(torch.float32).parameters())
    if params > KERNELBENCH_MAX_PARAMS:
        return (f"a KernelBench-style file's dimensions are its code's, and its {params:,} weights are more than "
                f"the {KERNELBENCH_MAX_PARAMS:,} validation builds on the CPU")
    return ""


def _hf_problem(cfg: LlmConfig, phase: str, batch: int, length: int, seed: int, layers: int,
                window: int | None, all_logits: bool = False) -> tuple[TorchProblem, dict[str, tuple[int, int]]]:
    config, reduced = reduced_config(cfg, layers, window)
    s = cfg.shape
    dtype = s.dtype
    static = cfg.cache == "static"

    def make_model() -> torch.nn.Module:
        from transformers import AutoModelForCausalLM

        lm = build_reference(lambda: AutoModelForCausalLM.from_config(config, dtype=dtype), seed)
        if phase == "prefill":
            return PrefillStep(lm, config, all_logits, cfg.cache)
        return _FlatStaticDecode(StaticDecodeStep(lm, config)) if static else _FlatDecode(DecodeStep(lm, config))

    heads = config.num_attention_heads
    kv, head_dim = kv_heads(config, heads), getattr(config, "head_dim", None) or config.hidden_size // heads

    def make_inputs() -> list[Any]:
        gen = torch.Generator().manual_seed(seed)
        if phase == "prefill":
            return [torch.randint(0, config.vocab_size, (batch, length), generator=gen)]
        ids = torch.randint(0, config.vocab_size, (batch, 1), generator=gen)
        if static:  # P + 1 slots, or a sliding layer's ring of W: the step's first input after the ids
            slots = [config.sliding_window if ring else length + 1 for ring in sliding_layers(config)]
            dims = cache_dims(config, kv, head_dim)
            cache = [torch.randn(batch, heads, n, width, generator=gen).to(dtype)
                     for n in slots for heads, width in dims]
            return [ids, torch.arange(length), *cache]
        dims = cache_dims(config, kv, head_dim) * config.num_hidden_layers
        cache = [torch.randn((batch, heads, length, width), generator=gen).to(dtype) for heads, width in dims]
        return [ids, *cache]

    return TorchProblem(make_model, make_inputs, f"{s.model_type}_{phase}_reduced"), reduced


def _kernelbench_problem(cfg: LlmConfig, phase: str, batch: int, length: int, seed: int) -> TorchProblem:
    """The file's model at its own dimensions, on the CPU with seeded weights, and its inputs at the sizes run."""
    from .llm_kernelbench import KernelBenchLlm

    source = cfg.source
    assert isinstance(source, KernelBenchLlm)
    sizes = {"batch": batch, "prompt" if phase == "prefill" else "context": length}

    def make_model() -> torch.nn.Module:
        return build_reference(lambda: source.build(source.dtype or torch.float32, device="cpu"), seed)

    def make_inputs() -> list[Any]:
        torch.manual_seed(seed)
        return source.inputs(phase, sizes, device="cpu")

    return TorchProblem(make_model, make_inputs, f"{cfg.shape.model_type}_{phase}_validated")


__all__ = ["StepValidation", "reduced_config", "validate_phases", "validate_step"]
