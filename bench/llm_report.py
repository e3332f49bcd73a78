"""`solar-llm`'s analysis and its views: one `LlmAnalysis` (every point, phase, target and mode) rendered as
tables, JSON (`{"version": 1, "points": [...]}`) and a latency/throughput plot against batch (docs/llm.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from solar.backends.report import quantity, seconds, strict_json
from solar.frontends.llm_config_checks import long_context_warning
from solar.frontends.llm_kernelbench import check_phases, load_llm
from solar.frontends.llm_models import LlmConfig, check_sizes
from solar.frontends.llm_quantization import config_quantization
from solar.frontends.llm_validate import validate_phases
from solar.ir.outputs import write_text_atomic
from solar.ir.tables import new_table, render_tables
from solar.passes.quantize import QuantizeOptions
from solar.targets.loader import Target

from .llm_deploy import Split, check_split
from .llm_flags import phases_of
from .llm_precision import peak_remarks
from .llm_quantized import quantized_memory
from .llm_serving import (
    MODES,
    ServingPoint,
    StepModel,
    check_one_layer_fits,
    crossover_batch,
    model_memory,
    price_phase,
    serving_point,
)

JSON_VERSION = 1


@dataclass
class LlmRequest:
    config: str
    targets: list[Target]
    phases: tuple[str, ...] = ("prefill", "decode")
    batches: list[int] = field(default_factory=lambda: [1])
    prompts: list[int] = field(default_factory=lambda: [512])
    contexts: list[int] = field(default_factory=lambda: [1024])
    generate: int = 1
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    expert_parallel: int = 1
    data_parallel: int = 1
    all_logits: bool = False
    dtype: str | None = None
    cache_aware: bool = False  # adds the cache-aware mode: a tiling search at the targets' L2 per point
    # Each phase's step also validated at reduced sizes (frontends/llm_validate.py): on unless opted out.
    validate: bool = True
    cache: str = "dynamic"  # the cache class: "dynamic" (DynamicCache) or "static" (StaticCache)
    # Weights, KV cache and activations quantized (passes/quantize.py); None: the config's own
    # quantization_config, if it has one, else none.
    quantize: QuantizeOptions | None = None
    verbose: bool = False  # library warnings from building the reduced twins shown
    precision_floor: str | None = None  # --precision-floor: contractions priced at it where that is faster

    @property
    def split(self) -> Split:
        return Split(self.tensor_parallel, self.pipeline_parallel, self.expert_parallel, self.data_parallel)


@dataclass
class LlmAnalysis:
    config: LlmConfig
    request: LlmRequest
    points: list[ServingPoint]
    crossovers: dict[tuple[str, str, int], int | None]  # (target, mode, context) -> least compute-bound batch
    remarks: list[str]
    notes: list[str]
    validations: list[str] = field(default_factory=list)  # what was validated, one line per phase
    warnings: list[str] = field(default_factory=list)  # priced as asked, but questionable (a context too long)
    quantization: QuantizeOptions | None = None  # what --quantize stored in low precision (None: nothing)
    steps: dict[str, StepModel] = field(default_factory=dict)  # each phase priced (the HTML's operator tables)


# Longer than most: the request's steps in order (load, quantize, check sizes, export each phase, price each point and
# target, crossovers, notes, validation), each a call out, kept together so the order they depend on reads top to
# bottom.
def analyse_llm(request: LlmRequest, warn: Callable[[str], None] | None = None) -> LlmAnalysis:
    """Every point of `request`; `warn` hears at once of what is priced but questionable (a context beyond
    the model's `max_position_embeddings`), before any step is exported."""
    check_sizes({"batch": request.batches, "prompt": request.prompts, "context": request.contexts,
                 "generate": [request.generate]})
    cfg = load_llm(request.config, request.dtype, request.cache)
    check_phases(cfg, request.phases)
    check_split(cfg, request.split)
    quantize = request.quantize
    if quantize is None and cfg.source is None:
        quantize = config_quantization(cfg.raw, cfg.path)
    memory = model_memory(cfg)
    if quantize is not None and quantize.active:
        memory = quantized_memory(cfg, memory, quantize)
    tokens = max([*request.prompts, *(c + request.generate for c in request.contexts)])
    # The longest sequence the asked phases run: a prompt, or a context and the tokens generated onto it.
    longest = max([*(request.prompts if "prefill" in request.phases else []),
                   *(c + request.generate for c in request.contexts if "decode" in request.phases)])
    warning = long_context_warning(cfg.path, cfg.config, longest) if cfg.source is None else None
    warnings = [warning] if warning else []
    if warning and warn is not None:
        warn(warning)
    check_one_layer_fits(memory, cfg, max(request.batches), tokens, request.tensor_parallel, request.targets)
    both = "prefill" in request.phases and "decode" in request.phases
    # Export at the largest sizes asked (at least 2, so export keeps them symbolic): branches the model
    # takes on its sizes (a window shorter than the prompt) then hold at every point evaluated.
    example_batch = max(2, *request.batches)
    points: list[ServingPoint] = []
    crossovers: dict[tuple[str, str, int], int | None] = {}
    remarks: list[str] = []
    steps: dict[str, StepModel] = {}
    for phase in request.phases:
        lengths = request.prompts if phase == "prefill" else request.contexts
        # Both phases priced: each point's request (its length as the prompt, then G tokens) needs the other
        # phase at its lengths too.
        requests = sorted(set(request.prompts) | set(request.contexts)) if both else lengths
        example = max(2, *requests) + (request.generate if phase == "decode" else 0)
        extra = range(request.generate) if phase == "decode" else range(1)
        evaluated = sorted({n + g for n in requests for g in extra})
        step = price_phase(cfg, phase, request.targets, example_batch, example, request.all_logits,
                           request.cache_aware, evaluated, request.batches, quantize,
                           precision_floor=request.precision_floor)
        steps[phase] = step
        step.prefetch(request.batches, evaluated)
        remarks += [r for r in step.remarks if r not in remarks]
        for target in request.targets:
            for mode in [m for m in MODES if m in step.modes]:
                for batch in request.batches:
                    for length in lengths:
                        points.append(serving_point(step, cfg, memory, target, mode, batch, length,
                                                    generate=request.generate, split=request.split))
                if phase == "decode":
                    for context in request.contexts:
                        crossovers[(target.name, mode, context)] = crossover_batch(step, target.name, mode, context)
    if both:
        for p in points:
            p.request_latency_s = request_latency(steps, cfg, memory, p, request)
    notes = [f"{len(next(iter(steps.values())).twins)} export(s) per phase"
             + (f": {', '.join(map(str, sorted(next(iter(steps.values())).twins)))}-layer twins, scaled to "
                f"{cfg.shape.layers} layers" if steps and len(next(iter(steps.values())).twins) > 1 else "")]
    remarks += peak_remarks(quantize, request.targets)
    if quantize is not None and quantize.active:
        notes.append(f"quantized: {quantize.describe()} (passes/quantize.py; weights read packed with their scales, "
                     "dequantized inside each contraction's fusion group)")
    if request.precision_floor:
        notes.append(f"precision floor {request.precision_floor}: contractions priced at {request.precision_floor} "
                     "where that is faster than their own precision (a kernel allowed to compute at it within a "
                     "tolerance, not the model as the framework runs it); the bytes stay the model's")
    notes += [f"{phase}: {step.fixed_batch_reason}" for phase, step in steps.items() if step.fixed_batch_reason]
    if any(step.alternative is not None for step in steps.values()):
        notes.append("latent attention (MLA): decode priced absorbed; prefill at the lesser of HF's expanded form "
                     "and the absorbed one at each point (docs/llm.md)")
    if cfg.shape.experts:
        notes.append(f"mixture of experts: FLOPs put every token through its top-{cfg.shape.top_k} experts; the "
                     f"bound reads {cfg.shape.top_k} of {cfg.shape.experts} experts' weights per layer (the least "
                     "any routing allows); JSON points carry the uniform-routing estimate, labelled as such")
    if cfg.shape.sliding_window and cfg.cache == "static":
        notes.append(f"sliding window {cfg.shape.sliding_window}: attention counts only the live pairs; a static "
                     "cache keeps each sliding layer as a ring of W slots, and decode reads its last W − 1 tokens "
                     "and writes the new one in place (HF's copy of the rolled window is not priced); the ring's "
                     "W tokens are what the KV-cache and fits figures hold")
    elif cfg.shape.sliding_window:
        notes.append(f"sliding window {cfg.shape.sliding_window}: attention counts only the live pairs and "
                     "decode reads the last W − 1 cached tokens (HF's sliding cache), which is all a sliding "
                     "layer's cache holds in the KV-cache and fits figures")
    validations: list[str] = []
    if request.validate:
        longest = {"prefill": max(request.prompts), "decode": max(request.contexts) + request.generate}
        validations, not_validated = validate_phases(cfg, request.phases, longest, request.all_logits,
                                                     request.verbose)
        remarks += not_validated
    return LlmAnalysis(cfg, request, points, crossovers, remarks, notes, validations, warnings,
                       quantize if quantize is not None and quantize.active else None, steps)


def request_latency(steps: dict[str, StepModel], cfg: LlmConfig, memory: Any, point: ServingPoint,
                    request: LlmRequest) -> float:
    """TTFT + Σ TPOT of a request whose prompt is the point's length (its prompt, or the context it decodes
    at) and which generates `--generate` tokens, on the point's deployment, target and mode."""
    length = point.prompt if point.phase == "prefill" else point.context
    assert length is not None
    target = next(t for t in request.targets if t.name == point.target)
    first = serving_point(steps["prefill"], cfg, memory, target, point.mode, point.batch, length,
                          split=request.split)
    rest = serving_point(steps["decode"], cfg, memory, target, point.mode, point.batch, length,
                         generate=request.generate, split=request.split)
    return first.time_s + rest.time_s * request.generate


# ---- views ---------------------------------------------------------------------------------------


def render(analysis: LlmAnalysis) -> str:
    s = analysis.config.shape
    head = (f"{analysis.config.path}: {s.model_type}, {s.layers} layers, hidden {s.hidden}, {s.heads} heads "
            f"({s.kv_heads} key-value), {str(s.dtype).replace('torch.', '')}; KV cache "
            f"{quantity(s.kv_bytes_per_token, 'B')} per token")
    tables: list[Any] = [head]
    for phase in analysis.request.phases:
        rows = [p for p in analysis.points if p.phase == phase]
        if not rows:
            continue
        label = "TTFT bound" if phase == "prefill" else "TPOT bound"
        length = "prompt" if phase == "prefill" else "context"
        split = analysis.request.split
        title = phase if split.chips == 1 else f"{phase} ({split}: {split.chips} chips; per replica, memory per chip)"
        table = new_table(title, ["target", "mode", "batch", length, label, "tokens/s", "weights",
                                  "KV cache", "fits", "bound", "tokens/s/chip", "memory", "request"], text_columns=2)
        for p in rows:
            table.add_row(p.target, MODES[p.mode], str(p.batch), str(p.prompt if phase == "prefill" else p.context),
                          seconds(p.time_s), quantity(p.tokens_per_s), quantity(p.weight_bytes, "B"),
                          quantity(p.kv_cache_bytes, "B"), "yes" if p.fits else "no", p.bound,
                          quantity(p.tokens_per_s_per_chip), quantity(p.memory.total, "B"),
                          seconds(p.request_latency_s) if p.request_latency_s is not None else "-")
        tables.append(table)
    if analysis.crossovers:
        table = new_table("decode turns compute-bound at batch", ["target", "mode", "context", "batch"], 2)
        for (target, mode, context), b in analysis.crossovers.items():
            table.add_row(target, MODES[mode], str(context), f"{b:,}" if b else "never (≤ 2^20)")
        tables.append(table)
    tables += [f"note: {n}" for n in analysis.notes] + [f"remark: {r}" for r in analysis.remarks]
    tables += [f"validation: {v}" for v in analysis.validations]
    return render_tables(tables)


def analysis_json(analysis: LlmAnalysis) -> dict[str, Any]:
    s = analysis.config.shape
    return {"version": JSON_VERSION, "config": analysis.config.path, "model_type": s.model_type,
            "layers": s.layers, "kv_bytes_per_token": s.kv_bytes_per_token,
            "points": [p.as_record() for p in analysis.points],
            "crossovers": [{"target": t, "mode": MODES[m], "context": c, "batch": b}
                           for (t, m, c), b in analysis.crossovers.items()],
            "remarks": analysis.remarks, "notes": analysis.notes, "validation": analysis.validations,
            "warnings": analysis.warnings, "precision_floor": analysis.request.precision_floor,
            "quantization": analysis.quantization.describe() if analysis.quantization is not None else None}


def write_json(analysis: LlmAnalysis, path: str) -> None:
    text = json.dumps(strict_json(analysis_json(analysis)), indent=1, allow_nan=False) + "\n"
    write_text_atomic(path, text, "the solar-llm report")


__all__ = ["LlmAnalysis", "LlmRequest", "analyse_llm", "analysis_json", "phases_of", "render",
           "write_json"]
