"""The cheapest deployments that meet a latency target (`solar-llm CONFIG --slo ttft=500ms,tpot=30ms
--throughput 2000 --quantize-options none,fp8,int4`; docs/llm.md, "Deploying").

Each quantization option is one priced model: its prefill and decode steps exported once, rewritten by
`quantize_module` (passes/quantize.py), fused and priced as cost surfaces. Every deployment (target, split,
batch) is then a formula: the steps' costs at the micro-batch, evaluated ahead on a grid, and the
deployment's collectives and memory (bench/llm_deploy.py). Data parallelism is not searched: a deployment
takes the fewest replicas whose tokens/s together reach `--throughput`.

The figures are bounds (least times, least memory, most tokens/s), so a deployment left off the front cannot
meet the target; one on it may still need engineering to.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solar.frontends.llm_models import LlmConfig, LlmError
from solar.frontends.llm_quantization import DEFAULT_EXCLUDE
from solar.passes.quantize import QuantizeOptions
from solar.targets.loader import Target

from .llm_deploy import (
    ChipMemory,
    Collectives,
    Split,
    chip_activation_bytes,
    chip_cache_bytes,
    chip_weight_bytes,
    collectives,
    micro_batches,
    prefill_seconds,
    split_problem,
)
from .llm_flags import searched_split
from .llm_precision import peak_remarks
from .llm_quantized import quantized_memory
from .llm_serving import Memory, StepModel, model_memory, price_phase, resident_tokens
from .llm_slo import Quantization, Slo, parse_quantize_options, parse_slo

SEARCH_MODE = "fused"


def quantize_options(option: Quantization) -> QuantizeOptions | None:
    """The options that price `option` (passes/quantize.py, run by `price_phase`); None: unquantized."""
    if not option.active:
        return None
    # lm_head stays as it is, as with solar-llm's --weights and every checkpoint format.
    return QuantizeOptions(weights=option.weights, group_size=option.group_size, kv_cache=option.kv_cache,
                           activations=option.activations, exclude=DEFAULT_EXCLUDE)


def quantizer(option: Quantization, cfg: LlmConfig, memory: Memory) -> tuple[QuantizeOptions | None, Memory]:
    """The options that price `option` and the memory it stores."""
    options = quantize_options(option)
    if options is None:
        return None, memory
    return options, quantized_memory(cfg, memory, options)  # every layer's bytes as it stores them


@dataclass(frozen=True)
class SearchRequest:
    config: str
    targets: list[Target]
    slo: Slo
    throughput: float  # output tokens/s over all replicas
    quantizations: list[Quantization]
    prompt: int = 512
    generate: int = 128
    batches: list[int] = field(default_factory=lambda: [2 ** k for k in range(10)])
    tensor: list[int] = field(default_factory=lambda: [1, 2, 4, 8, 16])
    pipeline: list[int] = field(default_factory=lambda: [1, 2, 4, 8])
    expert: list[int] = field(default_factory=lambda: [1, 2, 4, 8, 16, 32, 64])
    dtype: str | None = None
    cache: str = "dynamic"


@dataclass(frozen=True)
class Deployment:
    target: str
    quantization: str
    split: Split  # with the replicas the throughput needs
    batch: int  # sequences per replica
    ttft_s: float
    tpot_s: float  # the mean over the request's G decode steps
    memory: ChipMemory
    fits: bool
    meets_slo: bool
    generate: int
    # A decode pass's collectives, per chip and each way (as solar-llm's point of this deployment gives them).
    collectives: Collectives = field(default_factory=Collectives)

    @property
    def request_latency_s(self) -> float:
        return self.ttft_s + self.generate * self.tpot_s

    @property
    def tokens_per_s_per_replica(self) -> float:
        return self.batch / self.tpot_s

    @property
    def tokens_per_s_per_chip(self) -> float:
        return self.tokens_per_s_per_replica / self.split.replica_chips

    @property
    def chips(self) -> int:
        return self.split.chips

    def as_record(self) -> dict[str, Any]:
        return {"target": self.target, "quantization": self.quantization, **self.split.as_record(),
                "chips": self.chips, "replica_chips": self.split.replica_chips, "batch": self.batch,
                "ttft_s": self.ttft_s, "tpot_s": self.tpot_s, "request_latency_s": self.request_latency_s,
                "tokens_per_s": self.tokens_per_s_per_replica * self.split.data,
                "tokens_per_s_per_replica": self.tokens_per_s_per_replica,
                "tokens_per_s_per_chip": self.tokens_per_s_per_chip, **self.memory.as_record(),
                **self.collectives.as_record(), "fits": self.fits, "meets_slo": self.meets_slo}


@dataclass
class PricedOption:
    """One quantization option priced: its steps, its memory, and the steps' work seconds per micro-batch
    (fused mode, whole model on one chip): prefill at the prompt, decode at each of the G contexts."""

    quantization: Quantization
    memory: Memory
    prefill: StepModel
    decode: StepModel
    prefill_s: dict[tuple[str, int], float] = field(default_factory=dict)
    decode_s: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)


def price_option(cfg: LlmConfig, option: Quantization, request: SearchRequest, micro: list[int]) -> PricedOption:
    """Exports and prices both steps once and evaluates them on the grid of micro-batches × lengths."""
    quantize, memory = quantizer(option, cfg, model_memory(cfg))
    contexts = [request.prompt + g for g in range(request.generate)]
    big = max(2, *micro)
    prefill = price_phase(cfg, "prefill", request.targets, 2, max(2, request.prompt), lengths=[request.prompt],
                          batches=[1], quantize=quantize)
    decode = price_phase(cfg, "decode", request.targets, big, max(2, contexts[-1]), lengths=contexts,
                         batches=micro, quantize=quantize)
    prefill.prefetch([1], [request.prompt])
    decode.prefetch(micro, contexts)
    priced = PricedOption(option, memory, prefill, decode)
    for t in request.targets:
        priced.prefill_s[(t.name, 1)] = prefill.cost(1, request.prompt, t.name, SEARCH_MODE).seconds
        for b in micro:
            priced.decode_s[(t.name, b)] = np.array([decode.cost(b, n, t.name, SEARCH_MODE).seconds
                                                     for n in contexts])
    return priced


def splits(cfg: LlmConfig, request: SearchRequest) -> list[Split]:
    """Every split of the request's candidates that divides the model (EP only for a mixture of experts)."""
    experts = request.expert if cfg.shape.experts else [1]
    return [Split(tp, pp, ep) for tp in request.tensor for pp in request.pipeline for ep in experts
            if split_problem(cfg, Split(tp, pp, ep)) is None]


def evaluate(cfg: LlmConfig, priced: PricedOption, target: Target, split: Split, batch: int,
             request: SearchRequest) -> Deployment | None:
    """One deployment's figures (None: the target lacks a link the split needs)."""
    m = micro_batches(batch, split)
    micro = batch // m
    memory = priced.memory
    try:  # the same collectives as solar-llm's point of this deployment (bench/llm_serving.serving_point)
        pre = collectives(cfg, split, target, request.prompt, memory.moe_layers, memory.activations)
        dec = collectives(cfg, split, target, micro, memory.moe_layers, memory.activations)
    except LlmError:
        return None
    stage = split.stage_chips
    # TTFT: the request's own prompt alone through every stage, the least under any batching.
    ttft = prefill_seconds(priced.prefill_s[(target.name, 1)], split, pre, 1)
    steps = np.maximum(priced.decode_s[(target.name, micro)] / stage, dec.overlappable_s)
    tpot = float(np.mean(np.maximum(steps + dec.p2p_s, m * steps / split.pipeline)))
    s = cfg.shape
    per_layer = memory.kv_bytes_per_token // s.layers
    tokens = request.prompt + request.generate
    chip = ChipMemory(chip_weight_bytes(memory, split),
                      chip_cache_bytes(per_layer, resident_tokens(cfg, tokens), batch, s.kv_heads, split),
                      chip_activation_bytes(cfg, split, max(request.prompt, micro), micro))
    replicas = max(1, math.ceil(request.throughput * tpot / batch - 1e-12))
    return Deployment(target.name, priced.quantization.name, dataclasses.replace(split, data=replicas), batch, ttft,
                      tpot, chip, chip.total <= target.dram_capacity, request.slo.meets(ttft, tpot),
                      request.generate, dec)


def pareto_front(candidates: Sequence[Deployment]) -> list[Deployment]:
    """Those no other beats on both chips (fewer) and tokens/s per chip (more), by chips."""
    front: list[Deployment] = []
    for d in sorted(candidates, key=lambda d: (d.chips, -d.tokens_per_s_per_chip)):
        if not front or d.tokens_per_s_per_chip > front[-1].tokens_per_s_per_chip:
            front.append(d)
    return front


@dataclass
class SearchResult:
    config: LlmConfig
    request: SearchRequest
    evaluated: int
    feasible: list[Deployment]
    front: list[Deployment]
    notes: list[str]

    def front_of(self, target: str) -> list[Deployment]:
        """The front among one target's deployments (its first: the fewest of its chips that meet the SLO)."""
        return pareto_front([d for d in self.feasible if d.target == target])


def feasible_deployments(cfg: LlmConfig, priced: PricedOption, request: SearchRequest,
                         candidates: Sequence[Split]) -> tuple[list[Deployment], int]:
    """The deployments of one priced option (every target, split and batch) that fit and meet the SLO, and
    how many were evaluated."""
    feasible: list[Deployment] = []
    evaluated = 0
    for target in request.targets:
        for split in candidates:
            for batch in request.batches:
                evaluated += 1
                d = evaluate(cfg, priced, target, split, batch, request)
                if d is not None and d.fits and d.meets_slo:
                    feasible.append(d)
    return feasible, evaluated


def search(cfg: LlmConfig, request: SearchRequest) -> SearchResult:
    """Every option × target × split × batch evaluated; the front of those that fit and meet the SLO."""
    candidates = splits(cfg, request)
    if not candidates:
        raise LlmError("no split of the candidates divides the model's heads, layers and experts")
    micro = sorted({1} | {b // micro_batches(b, s) for b in request.batches for s in candidates})
    feasible: list[Deployment] = []
    evaluated = 0
    for option in request.quantizations:
        found, count = feasible_deployments(cfg, price_option(cfg, option, request, micro), request, candidates)
        feasible += found
        evaluated += count
    notes = [f"{evaluated} deployments evaluated ({len(request.quantizations)} quantization option(s) × "
             f"{len(request.targets)} target(s) × {len(candidates)} split(s) × {len(request.batches)} batch(es)); "
             f"{len(feasible)} fit and meet the SLO",
             f"a request: prompt {request.prompt}, then {request.generate} tokens; TTFT is its prompt's prefill alone "
             "(the least under any batching), TPOT the mean over its decode steps at the batch, tokens/s the "
             "decode's (prefills not charged: an upper bound); mode fused"]
    for option in request.quantizations:
        notes += [n for n in peak_remarks(quantize_options(option), request.targets) if n not in notes]
    return SearchResult(cfg, request, evaluated, feasible, pareto_front(feasible), notes)


def search_from_flags(config: str, targets: str, slo: str, throughput: float | None, quantize_options: str,
                      batch: str | None, prompt: str, generate: int, split: tuple[int | None, int | None, int | None],
                      dtype: str | None, cache: str) -> SearchResult:
    """solar-llm's search from its flags: a split or batch given is kept (`--batch 1` too), the others (None)
    are searched (batches 1 .. 512, TP 1 .. 16, PP 1 .. 8, EP 1 .. 64); a request generates `--generate`
    tokens (128 if not given)."""
    from solar.backends.sweep_spec import sizes
    from solar.frontends.llm_kernelbench import load_llm
    from solar.targets.loader import load_target

    cfg = load_llm(config, dtype, cache)
    fields: dict[str, Any] = {}
    if batch is not None:
        fields["batches"] = sizes(batch, "--batch")
    for key, value in zip(("tensor", "pipeline", "expert"), split, strict=True):
        if value is not None:
            fields[key] = [value]
    fixed = searched_split(split)
    problem = split_problem(cfg, fixed) if fixed.replica_chips != 1 else None  # a given 0 is refused there
    if problem:
        raise LlmError(problem)
    request = SearchRequest(config, [load_target(t.strip()) for t in targets.split(",") if t.strip()],
                            parse_slo(slo), throughput or 0.0, parse_quantize_options(quantize_options),
                            sizes(prompt, "--prompt")[0], generate if generate > 1 else 128, dtype=dtype,
                            cache=cache, **fields)
    return search(cfg, request)


# ---- views ---------------------------------------------------------------------------------------


def render_search(result: SearchResult) -> str:
    from solar.backends.report import quantity, seconds
    from solar.ir.tables import new_table, render_tables

    r = result.request
    head = (f"{result.config.path}: deployments meeting {r.slo} at {quantity(r.throughput)} tokens/s "
            f"(targets {', '.join(t.name for t in r.targets)}; quantization "
            f"{', '.join(q.name for q in r.quantizations)})")
    table = new_table("Pareto front: chips against tokens/s per chip (bounds)",
                      ["target", "quant", "TP", "PP", "EP", "DP", "chips", "batch", "TTFT", "TPOT", "request",
                       "tokens/s/chip", "memory/chip"], text_columns=2)
    for d in result.front:
        table.add_row(d.target, d.quantization, str(d.split.tensor), str(d.split.pipeline), str(d.split.expert),
                      str(d.split.data), str(d.chips), str(d.batch), seconds(d.ttft_s), seconds(d.tpot_s),
                      seconds(d.request_latency_s), quantity(d.tokens_per_s_per_chip), quantity(d.memory.total, "B"))
    body: list[Any] = [head, table] if result.front else [head, "no deployment searched meets the SLO and fits"]
    for target in r.targets:
        own = result.front_of(target.name)
        if own and len(r.targets) > 1:
            d = own[0]
            body.append(f"fewest {target.name} chips: {d.chips} ({d.quantization}, TP {d.split.tensor} × PP "
                        f"{d.split.pipeline} × EP {d.split.expert} × DP {d.split.data}, batch {d.batch}, "
                        f"{quantity(d.tokens_per_s_per_chip)} tokens/s per chip)")
        elif not own:
            body.append(f"fewest {target.name} chips: none of those searched meets the SLO and fits")
    return render_tables(body + [f"note: {n}" for n in result.notes])


def search_json(result: SearchResult) -> dict[str, Any]:
    r = result.request
    return {"version": 1, "config": result.config.path, "slo": {"ttft_s": r.slo.ttft_s, "tpot_s": r.slo.tpot_s},
            "throughput": r.throughput, "prompt": r.prompt, "generate": r.generate, "evaluated": result.evaluated,
            "front": [d.as_record() for d in result.front],
            "front_per_target": {t.name: [d.as_record() for d in result.front_of(t.name)] for t in r.targets},
            "feasible": len(result.feasible), "notes": result.notes}


def write_search_json(result: SearchResult, path: str) -> None:
    import json

    from solar.backends.report import strict_json
    from solar.ir.outputs import write_text_atomic

    text = json.dumps(strict_json(search_json(result)), indent=1, allow_nan=False) + "\n"
    write_text_atomic(path, text, "the solar-llm search")


def plot_search(result: SearchResult, path: str) -> None:
    """Every feasible deployment (chips, tokens/s per chip), the front drawn over them, one colour a target."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from solar.ir.outputs import save_figure

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for target in result.request.targets:
        pts = [d for d in result.feasible if d.target == target.name]
        ax.scatter([d.chips for d in pts], [d.tokens_per_s_per_chip for d in pts], s=6, alpha=0.3,
                   label=f"{target.name} (meets the SLO)")
    ax.plot([d.chips for d in result.front], [d.tokens_per_s_per_chip for d in result.front], marker="o",
            color="black", label="front")
    for d in result.front:
        ax.annotate(f"{d.target} {d.quantization} TP{d.split.tensor} PP{d.split.pipeline} EP{d.split.expert} "
                    f"B{d.batch}", (d.chips, d.tokens_per_s_per_chip), fontsize=6, xytext=(3, 3),
                    textcoords="offset points")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("chips")
    ax.set_ylabel("tokens/s per chip (bound)")
    ax.set_title(f"deployments meeting {result.request.slo}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    try:
        save_figure(fig, path, "the solar-llm search plot", dpi=120)
    finally:
        plt.close(fig)
