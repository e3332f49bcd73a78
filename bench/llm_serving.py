"""Serving figures of a language model from its own code: prefill (time to first token), decode (time per
output token) at a context, tokens/s, weights and KV-cache bytes, memory fit, compute- or memory-bound, and
the batch at which decode turns compute-bound (docs/llm.md).

Each step is exported once (frontends/llm_models.py) with batch, prompt and context as size parameters,
lifted and fused, and priced as a `CostSurface` (backends/sweep.py): a point of a sweep is an evaluation of
exact formulas, not a run of the passes. When every decoder layer is the same computation, twins with 2 and
3 layers are exported instead of all of them: every unit's and group's counts are the 2-layer twin's plus
(layers − 2) times the difference, exactly, and each roofline is taken at those counts (bench/twins.py).
Layers that repeat a pattern after a prefix of their own (DeepSeek's dense first layers, Gemma's sliding and
full layers) are priced so too, from two twins that keep the prefix and differ by one period of the
pattern (`LlmConfig.twin_layers`).

Tensor parallelism over N chips splits weights, heads and the KV cache: a chip does at least 1/N of every
unit's FLOPs and bytes, and each layer all-reduces its attention and MLP outputs. An all-reduce of M bytes
moves at least (N − 1)/N · M through each chip's links each way, at half the bidirectional NVLink figure.
The all-reduce may overlap compute (as asynchronous tensor parallelism does), so the bound is the larger of
the two, never their sum.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from solar.backends.mode_results import ModeResult
from solar.backends.sweep import CACHE_AWARE, CostSurface, ModeArrays
from solar.frontends.llm_mla import latent_widths
from solar.frontends.llm_models import (
    LlmConfig,
    LlmError,
    PhaseExport,
    build_model,
    export_phase,
    sliding_layers,
    weight_bytes,
)
from solar.ir.analysis.isl_model import isl_name
from solar.ir.diagnostics import DiagnosticEngine, DiagnosticError
from solar.ir.ops import ModuleOp
from solar.ir.pass_manager import Pass, PassContext, PassManager
from solar.passes.fuse import Fuse
from solar.passes.inline import Inline
from solar.passes.lift_einsum import LiftEinsum
from solar.passes.quantize import Quantize, QuantizeOptions
from solar.targets.loader import Target

from .llm_deploy import (
    ChipMemory,
    Collectives,
    Split,
    chip_activation_bytes,
    chip_cache_bytes,
    chip_weight_bytes,
    collectives,
    decode_step_seconds,
    micro_batches,
    prefill_seconds,
)
from .twins import Terms, scaled_seconds

# Every mode solar-llm prices, in the order of the tables (the cache-aware one with --cache-aware only).
MODES = {"unfused": "unfused", "fused": "fused", CACHE_AWARE: "cache-aware", "whole_graph": "whole-graph"}
MAX_CROSSOVER_BATCH = 1 << 20


@dataclass(frozen=True)
class StepCost(ModeResult):
    """One step at one point on one target in one mode, for the whole model on one chip: the mode's figures
    (`ModeResult`) with the step's multiply-accumulates on tensor cores."""

    macs: int = 0
    # Each unit's or group's (tensor, vector, memory) seconds, for scaling twins by counts (bench/twins.py).
    parts: tuple[Terms, ...] = ()


@dataclass
class StepModel:
    """One phase, priced: the surfaces of its twins and which parameters are batch and length.

    When the batch cannot stay a size parameter (a mixture of experts routes the B·S tokens of a prefill as
    one axis, a product of two sizes that ISL cannot hold), `export_at` exports the twins at each batch
    asked, with the batch a number: `twins` are then those of the example batch."""

    phase: str
    layers: int
    twins: dict[int, CostSurface]
    sizes: dict[str, str]
    remarks: list[str] = field(default_factory=list)
    export_at: Callable[[int], dict[int, CostSurface]] | None = None  # batch -> twins, batch a number
    fixed_batch_reason: str | None = None
    # The least length the exports hold for (a guard the model's branches put on its sizes, such as a sliding
    # window shorter than the context); the lengths below it are priced by `shorter`, exported below it.
    least_length: int = 1
    shorter: StepModel | None = None
    # The greatest length the exports hold for, where a guard bounds it (a static cache's sliding ring that
    # has not filled: P < W; a dynamic one below its window); None: no bound. The lengths above it are priced
    # by `longer`, exported above it.
    most_length: int | None = None
    longer: StepModel | None = None
    # Another form of the same step (an MLA prefill's absorbed attention beside HF's expanded one): each
    # point is priced at the lesser time of the two, the least work an implementation needs there.
    alternative: StepModel | None = None
    # Twin costs evaluated ahead on a grid (`prefetch`): (layers, batch, length, target, mode) -> cost.
    _table: dict[tuple[int, int, int, str, str], StepCost] = field(default_factory=dict)
    _per_batch: dict[int, dict[int, CostSurface]] = field(default_factory=dict)

    @property
    def length_name(self) -> str:
        return "prompt" if self.phase == "prefill" else "context"

    @property
    def modes(self) -> tuple[str, ...]:
        return next(iter(self.twins.values())).modes

    def twins_at(self, batch: int) -> dict[int, CostSurface]:
        """The twins that price `batch`: the symbolic ones, or those exported at that batch."""
        if self.export_at is None:
            return self.twins
        if batch not in self._per_batch:
            self._per_batch[batch] = self.export_at(batch)
        return self._per_batch[batch]

    @property
    def pinned(self) -> bool:
        """The exports specialised the length (it is no size parameter): they hold at `least_length` alone."""
        return self.length_name not in self.sizes

    def prefetch(self, batches: Sequence[int], lengths: Sequence[int]) -> None:
        """Evaluates every twin on the grid batches × lengths at once (one vectorised evaluation each)."""
        if self.alternative is not None:
            self.alternative.prefetch(batches, lengths)
        below = [n for n in lengths if n < self.least_length]
        if below:
            self._below(below[0]).prefetch(batches, below)
        above = [n for n in lengths if self.most_length is not None and n > self.most_length]
        if above:
            self._above(above[0]).prefetch(batches, above)
        batches = sorted(set(batches))
        lengths = sorted({n for n in lengths if n >= self.least_length and n not in above})
        if self.export_at is None:
            for layers, surface in self.twins.items():
                for axes in self._length_axes(lengths):
                    self._fill(layers, surface, {self.sizes["batch"]: batches, **axes}, None)
            return
        for batch in batches:
            for layers, surface in self.twins_at(batch).items():
                for axes in self._length_axes(lengths):
                    self._fill(layers, surface, axes, batch)

    def _length_axes(self, lengths: list[int]) -> list[dict[str, list[int]]]:
        """The grid axes of the lengths: one axis, or with a static cache one grid per context, its slots
        holding the context and the new token (a grid is a product; the slots follow the context); none
        where the length is pinned."""
        if self.pinned:
            return [{}] if lengths else []
        l_name = self.sizes[self.length_name]
        if "cache_slots" not in self.sizes:
            return [{l_name: lengths}]
        return [{l_name: [n], self.sizes["cache_slots"]: [n + 1]} for n in lengths]

    def _fill(self, layers: int, surface: CostSurface, axes: dict[str, list[int]], batch: int | None) -> None:
        sweep = surface.grid(axes, per_unit=True)
        isl = {isl_name(n): sweep.env[n] for n in surface.params}
        tensor_flops = surface.formulas("unfused")["flops_tensor"]
        macs = (tensor_flops.evaluate_grid(isl) if hasattr(tensor_flops, "evaluate_grid")
                else np.full(sweep.shape, tensor_flops, dtype=object))
        for index, point in sweep.points():
            b = point[self.sizes["batch"]] if batch is None else batch
            for target, modes in sweep.arrays.items():
                for mode, a in modes.items():
                    length = self.least_length if self.pinned else point[self.sizes[self.length_name]]
                    self._table[(layers, b, length, target, mode)] = StepCost(
                        mode, float(a.seconds[index]), float(a.tensor_s[index]), float(a.vector_s[index]),
                        float(a.memory_s[index]), int(a.flops[index]), int(a.bytes[index]), int(macs[index]) // 2,
                        _parts(a, index))

    def _twin(self, layers: int, batch: int, length: int, target: str, mode: str) -> StepCost:
        key = (layers, batch, length, target, mode)
        if key not in self._table:
            values = {} if self.pinned else {self.sizes[self.length_name]: length}
            if "cache_slots" in self.sizes:  # a static cache holds the context and the new token
                values[self.sizes["cache_slots"]] = length + 1
            if self.export_at is None:
                values[self.sizes["batch"]] = batch
            self._table[key] = _at(self.twins_at(batch)[layers], values, target, mode)
        return self._table[key]

    def _below(self, length: int) -> StepModel:
        if self.shorter is None:
            raise LlmError(f"{self.length_name} {length}: the {self.phase} step was exported for "
                           f"{self.length_name} ≥ {self.least_length} (the model branches on it there, as a sliding "
                           "window does); ask the shorter lengths with it, or in a run of their own")
        return self.shorter

    def _above(self, length: int) -> StepModel:
        if self.longer is None:
            raise LlmError(f"{self.length_name} {length}: the {self.phase} step was exported for "
                           f"{self.length_name} ≤ {self.most_length} (the model branches on it above, as a sliding "
                           f"window's cache does when it fills); ask the longer lengths with it, or in a run of "
                           "their own")
        return self.longer

    def cost(self, batch: int, length: int, target: str, mode: str) -> StepCost:
        own = self._own_cost(batch, length, target, mode)
        if self.alternative is None:
            return own
        other = self.alternative.cost(batch, length, target, mode)
        return other if other.seconds < own.seconds else own

    def _own_cost(self, batch: int, length: int, target: str, mode: str) -> StepCost:
        if length < self.least_length:
            return self._below(length).cost(batch, length, target, mode)
        if self.most_length is not None and length > self.most_length:
            return self._above(length).cost(batch, length, target, mode)
        per = {n: self._twin(n, batch, length, target, mode) for n in self.twins}
        if len(per) == 1:
            return next(iter(per.values()))
        (la, a), (lb, b) = sorted(per.items())
        k = Fraction(self.layers - la, lb - la)

        def scale(x: Any, y: Any) -> Any:
            return x + (y - x) * k

        tensor, vector, memory = (float(scale(getattr(a, f), getattr(b, f))) for f in ("tensor_s", "vector_s",
                                                                                        "memory_s"))
        twins = self.twins_at(batch)
        keys = [twins[n].keys(mode) for n in (la, lb)]
        if mode == "whole_graph":
            seconds = max(tensor, vector, memory)
        elif keys[0] is not None and keys[1] is not None and len(keys[0]) == len(a.parts) \
                and len(keys[1]) == len(b.parts):
            seconds = scaled_seconds(a.parts, keys[0], b.parts, keys[1], k)
        else:  # no key to match units by (a cache-aware mode whose rows are not the groups): the time scaled
            seconds = float(scale(a.seconds, b.seconds))
        return StepCost(mode, seconds, tensor, vector, memory, int(scale(a.flops, b.flops)),
                        int(scale(a.bytes, b.bytes)), int(scale(a.macs, b.macs)))


def _at(surface: CostSurface, values: dict[str, int], target: str, mode: str) -> StepCost:
    if mode != CACHE_AWARE and surface.buffer is not None:
        # Another mode needs no tiling search: price it on a view of the surface without the buffer.
        surface = copy.copy(surface)
        surface.buffer = None
    point = surface.point({k: v for k, v in values.items() if k in surface.params})
    a = surface.grid({k: [v] for k, v in point.items()}, per_unit=True).arrays[target][mode]
    index = (0,) * a.seconds.ndim
    tensor_flops = surface.formulas("unfused")["flops_tensor"]
    isl_point = {isl_name(k): v for k, v in point.items()}
    flops_tc = tensor_flops.evaluate(isl_point) if hasattr(tensor_flops, "evaluate") else tensor_flops
    return StepCost(mode, float(a.seconds[index]), float(a.tensor_s[index]), float(a.vector_s[index]),
                    float(a.memory_s[index]), int(a.flops[index]), int(a.bytes[index]), int(flops_tc) // 2,
                    _parts(a, index))


def _parts(a: ModeArrays, index: tuple[int, ...]) -> tuple[Terms, ...]:
    """Each unit's or group's roofline terms at one point of a grid."""
    assert a.unit_terms is not None  # the grids here are asked per_unit
    return tuple((float(t[index]), float(v[index]), float(m[index])) for t, v, m in a.unit_terms)


def lifted(module: ModuleOp, quantize: QuantizeOptions | None = None) -> tuple[ModuleOp, list[str]]:
    """The module after inline, lift-einsum (masks as where-clauses), quantize (when asked) and fuse; the
    remarks that matter."""
    work = copy.deepcopy(module)
    engine = DiagnosticEngine()
    ctx = PassContext(engine, report=lambda _text: None)
    passes: list[Pass] = [Inline(), LiftEinsum()]
    if quantize is not None and quantize.active:
        passes.append(Quantize(**quantize.pass_fields()))
    try:
        work = PassManager([*passes, Fuse()], verify_each=False).run(work, ctx)
    except DiagnosticError as err:  # a pass refused the step (--quantize's group size): its errors alone
        raise LlmError("; ".join(d.message for d in err.diagnostics if d.severity == "error")) from None
    if engine.has_errors:
        raise LlmError(engine.format_all())
    remarks = [d.message for d in engine.diagnostics if "mask" in d.message]
    return work, remarks


# A size the IR cannot hold: the tokens of a prefill flattened to one axis (B·S) multiply two parameters.
_PRODUCT_OF_SIZES = "multiplies two variables"
_EXPORT_LEAST_SIZE = 2


# Longer than most: a phase's export fallbacks (a symbolic batch, an export per batch, pinned lengths, length ranges
# priced apart) share the sizes, twins and remarks their nested helpers fill.
def price_phase(cfg: LlmConfig, phase: str, targets: Sequence[Target], batch: int, length: int,
                all_logits: bool = False, cache_aware: bool = False, lengths: Sequence[int] = (),
                batches: Sequence[int] = (), quantize: QuantizeOptions | None = None,
                absorbed: bool | None = None, precision_floor: str | None = None) -> StepModel:
    """Exports and prices one phase (twins where the layers repeat: `LlmConfig.twin_layers`) at an example
    size. A prefill whose tokens the IR cannot hold as B·S is exported per batch instead
    (`StepModel.export_at`). With `cache_aware`, the surfaces add the cache-aware mode at the targets' L2 (a
    tiling search per point).
    `lengths` below the least the export holds for (the model's branch on its sizes: a sliding window
    shorter than the example) get an export of their own, at the largest of them (`StepModel.shorter`), and
    so do those above the greatest (`StepModel.longer`).
    Where the batch must be a number, the first export is at the largest of `batches` (a request for batch 1
    exports batch 1 only; the symbolic export's least batch, 2, is no need there). `precision_floor` prices
    each float contraction at the floor where that is faster (backends/precision_policy.py).
    Latent attention (MLA) is priced absorbed in a decode step; a prefill's is priced both as HF writes it
    (expanded) and absorbed, each point at the lesser (`StepModel.alternative`; `absorbed` picks one)."""
    total = cfg.shape.layers
    counts = cfg.twin_layers() or (total,)
    buffer = "l2" if cache_aware else None
    remarks: list[str] = []
    length_key = "prompt" if phase == "prefill" else "context"
    least = [1]
    most: list[int | None] = [None]

    def export(at_batch: int, batch_symbolic: bool) -> tuple[dict[int, CostSurface], dict[str, str]]:
        twins: dict[int, CostSurface] = {}
        sizes: dict[str, str] = {}
        for layers in counts:
            exported: PhaseExport = export_phase(cfg, phase, at_batch, length, layers, all_logits, batch_symbolic,
                                                 absorbed)
            module, notes = lifted(exported.module, quantize)
            twins[layers] = CostSurface(module, targets, buffer=buffer, precision_floor=precision_floor)
            sizes = exported.sizes
            least[0] = max(least[0], exported.minimums.get(length_key, 1))
            if length_key in exported.maximums:
                bound = exported.maximums[length_key]
                most[0] = bound if most[0] is None else min(most[0], bound)
            remarks[:] = sorted(set(remarks) | set(notes))
        return twins, sizes

    export_at: Callable[[int], dict[int, CostSurface]] | None = None
    reason = None
    # A mixture of experts routes a prefill's B·S tokens as one axis: known ahead, so not tried symbolic.
    routed = phase == "prefill" and cfg.shape.experts > 0
    try:
        if routed:
            raise LlmError(_PRODUCT_OF_SIZES)
        twins, sizes = export(batch, True)
    except LlmError as err:
        if phase != "prefill" or _PRODUCT_OF_SIZES not in str(err):
            raise
        fixed = max(batches) if batches else batch
        twins, sizes = export(fixed, False)
        what = "its experts route" if routed else "it flattens"
        reason = (f"the batch is a number in each prefill export: {what} the B·S tokens as one axis, a product "
                  "of two sizes the IR cannot hold (one export per batch asked)")

        def export_at(at_batch: int) -> dict[int, CostSurface]:
            return twins if at_batch == fixed else export(at_batch, False)[0]

    # A length export specialised (where a sliding window's branch and slice meet, P = W − 2 or W − 1 of a
    # dynamic cache) is a number of the IR: that export prices that length alone.
    pinned = length_key not in sizes and most[0] == least[0]
    needed = ("prompt",) if export_at is not None else ("batch", length_key)
    for key in needed:
        if key not in sizes and not (key == length_key and pinned):
            raise LlmError(f"the {phase} step's {key} did not stay a size parameter under export")
    # Export's own least value of a dynamic size is 2 (it specialises 0 and 1), which the IR does not need.
    least_length = least[0] if least[0] > _EXPORT_LEAST_SIZE or pinned else 1
    below = sorted(n for n in lengths if n < least_length)
    above = sorted(n for n in lengths if most[0] is not None and n > most[0])

    def piece(part: list[int], example: int) -> StepModel | None:
        if not part:
            return None
        step = price_phase(cfg, phase, targets, batch, example, all_logits, cache_aware, part, batches, quantize,
                           absorbed, precision_floor)
        remarks[:] = sorted(set(remarks) | set(step.remarks))
        return step

    shorter = piece(below, max(_EXPORT_LEAST_SIZE, below[-1]) if below else 0)
    longer = piece(above, above[-1] if above else 0)
    alternative = None
    if phase == "prefill" and absorbed is None and latent_widths(cfg.config) is not None and cfg.source is None:
        alternative = price_phase(cfg, phase, targets, batch, length, all_logits, cache_aware, lengths, batches,
                                  quantize, absorbed=True, precision_floor=precision_floor)
    return StepModel(phase, total, twins, sizes, remarks, export_at, reason, least_length, shorter, most[0], longer,
                     alternative)


# ---- serving figures -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Memory:
    weight_bytes: int
    layer_weight_bytes: int
    kv_bytes_per_token: int
    expert_bytes: int = 0  # one routed expert of one layer (0: dense)
    # Per layer: its weights and its routed experts' share of them (a deployment splits them differently).
    layer_bytes: tuple[int, ...] = ()
    layer_expert_bytes: tuple[int, ...] = ()
    embedding_bytes: int = 0
    tied_head: bool = False  # the head is the embedding table (held once, but on both ends of a pipeline)
    activations: str = "none"  # the format the contractions read activations in (the EP dispatch sends it)

    @property
    def moe_layers(self) -> int:
        return sum(1 for e in self.layer_expert_bytes if e)


def model_memory(cfg: LlmConfig) -> Memory:
    model = build_model(cfg.config, cfg.shape.dtype, cfg.path)
    layers = getattr(getattr(model, "model", model), "layers", None)
    layer = weight_bytes(layers[0]) if layers is not None and len(layers) else 0
    per_layer = tuple(weight_bytes(m) for m in layers) if layers is not None else ()
    routed = [[m for name, m in block.named_modules() if name.endswith("experts")] for block in layers or ()]
    per_expert_layer = tuple(weight_bytes(r[0]) if r and cfg.shape.experts else 0 for r in routed)
    experts = 0
    if cfg.shape.experts and per_expert_layer:
        experts = next((e for e in per_expert_layer if e), 0) // cfg.shape.experts
    embedding = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    tied = embedding is not None and head is not None and head.weight is embedding.weight
    return Memory(weight_bytes(model), layer, cfg.shape.kv_bytes_per_token, experts, per_layer, per_expert_layer,
                  weight_bytes(embedding) if embedding is not None else 0, tied)


def uniform_routing_estimate(cfg: LlmConfig, memory: Memory, tokens: int) -> dict[str, float]:
    """An *estimate*, not a bound: the experts a step reads per layer when each token picks k of E
    uniformly, E·(1 − (1 − k/E)^tokens), and the weight bytes that reads. The bound itself reads k experts
    per layer, the least any routing allows."""
    e, k = cfg.shape.experts, cfg.shape.top_k
    experts_read = e * (1 - (1 - k / e) ** tokens)
    dense = memory.weight_bytes - cfg.shape.layers * e * memory.expert_bytes
    return {"experts_read_per_layer": experts_read,
            "weight_bytes_read": dense + cfg.shape.layers * experts_read * memory.expert_bytes,
            "least_weight_bytes_read": dense + cfg.shape.layers * k * memory.expert_bytes}


def resident_tokens(cfg: LlmConfig, tokens: int) -> list[int]:
    """The tokens each layer's cache holds after `tokens` have passed: all of them in a full-attention
    layer; in a sliding-window layer the last W − 1, as HF's sliding cache keeps them (a step attends
    those and its own token), or with a static cache the last W, what its ring of W slots holds."""
    s = cfg.shape
    if not s.sliding_window:
        return [tokens] * s.layers
    if cfg.source is not None:  # a KernelBench-style file: its cache inputs are what it keeps
        return [tokens] * s.layers
    kept = s.sliding_window if cfg.cache == "static" else s.sliding_window - 1
    return [min(tokens, kept) if slides else tokens for slides in sliding_layers(cfg.config, cfg.cache)]


def resident_cache_bytes(cfg: LlmConfig, memory: Memory, batch: int, tokens: int) -> int:
    """The KV cache's bytes over every layer for `batch` sequences of `tokens` tokens."""
    per_layer = memory.kv_bytes_per_token // cfg.shape.layers
    return per_layer * batch * sum(resident_tokens(cfg, tokens))


def check_one_layer_fits(memory: Memory, cfg: LlmConfig, batch: int, tokens: int, chips: int,
                         targets: Sequence[Target]) -> None:
    """A model whose single layer (weights and cache) does not fit a chip cannot run at all."""
    per_layer_kv = memory.kv_bytes_per_token // cfg.shape.layers * batch * max(resident_tokens(cfg, tokens))
    need = (memory.layer_weight_bytes + per_layer_kv) / chips
    for t in targets:
        if need > t.dram_capacity:
            raise LlmError(f"one layer needs {need / 1e9:.3g} GB per chip ({memory.layer_weight_bytes / 1e9:.3g} GB "
                           f"of weights, {per_layer_kv / 1e9:.3g} GB of cache for {batch} × {tokens} tokens"
                           f"{f', over {chips} chips' if chips > 1 else ''}), more than {t.name}'s "
                           f"{t.dram_capacity / 1e9:.3g} GB")


@dataclass
class ServingPoint:
    """One phase at one point, deployed over `split`: `cost` is the whole model's step on one chip at the
    point's batch; the times are the deployment's (bench/llm_deploy.py), per replica."""

    phase: str
    batch: int
    prompt: int | None
    context: int | None
    target: str
    mode: str
    cost: StepCost
    memory: ChipMemory
    collectives: Collectives
    split: Split
    time_s: float
    fits: bool
    generate: int = 1
    moe_estimate: dict[str, float] | None = None  # uniform routing (labelled an estimate), MoE models only
    compute_bound: bool = False
    # TTFT + Σ TPOT of a request of the point's length and `generate` tokens (None: a phase not priced).
    request_latency_s: float | None = None

    @property
    def chips(self) -> int:
        return self.split.replica_chips

    @property
    def weight_bytes(self) -> int:
        return self.memory.weight_bytes

    @property
    def kv_cache_bytes(self) -> int:
        return self.memory.kv_cache_bytes

    @property
    def allreduce_s(self) -> float:
        return self.collectives.allreduce_s

    @property
    def bound(self) -> str:
        return "compute" if self.compute_bound else "memory"  # the interconnect counts as data movement

    @property
    def tokens_per_s(self) -> float:
        """Per replica."""
        tokens = self.batch * (self.prompt or 1) if self.phase == "prefill" else self.batch
        return tokens / self.time_s if self.time_s > 0 else float("inf")

    @property
    def tokens_per_s_per_chip(self) -> float:
        return self.tokens_per_s / self.split.replica_chips

    def as_record(self) -> dict[str, Any]:
        return {"phase": self.phase, "batch": self.batch, "prompt": self.prompt, "context": self.context,
                "target": self.target, "mode": MODES[self.mode], "macs": self.cost.macs, "flops": self.cost.flops,
                "bytes": self.cost.bytes, "weight_bytes": self.weight_bytes, "kv_cache_bytes": self.kv_cache_bytes,
                "time_s": self.time_s, "bound": self.bound, "fits": self.fits, "tokens_per_s": self.tokens_per_s,
                "tokens_per_s_per_chip": self.tokens_per_s_per_chip,
                "tokens_per_s_all_replicas": self.tokens_per_s * self.split.data,
                "chips": self.split.chips, "replica_chips": self.split.replica_chips, **self.split.as_record(),
                **self.memory.as_record(), **self.collectives.as_record(), "generate": self.generate,
                "request_latency_s": self.request_latency_s,
                **({"moe_uniform_routing_estimate": self.moe_estimate} if self.moe_estimate else {})}


def serving_point(step: StepModel, cfg: LlmConfig, memory: Memory, target: Target, mode: str, batch: int,
                  length: int, chips: int = 1, generate: int = 1, split: Split | None = None) -> ServingPoint:
    """The figures of one point. Decode with `generate` G > 1 is the mean over contexts P .. P + G − 1.
    `chips` is tensor parallelism alone (`split` gives every kind)."""
    split = split or Split(tensor=chips)
    m = micro_batches(batch, split)
    micro = batch // m
    if step.phase == "prefill":
        cost = step.cost(batch, length, target.name, mode)
        work = cost if m == 1 else step.cost(micro, length, target.name, mode)
        tokens_in_cache, tokens, logit_tokens = length, batch * length, batch
        coll = collectives(cfg, split, target, micro * length, memory.moe_layers, memory.activations)
        time_s = prefill_seconds(work.seconds, split, coll, m)
    else:
        costs = [step.cost(batch, length + g, target.name, mode) for g in range(generate)]
        cost = _mean(costs)
        works = costs if m == 1 else [step.cost(micro, length + g, target.name, mode) for g in range(generate)]
        work = _mean(works)
        tokens_in_cache, tokens, logit_tokens = length + generate, batch, batch
        coll = collectives(cfg, split, target, micro, memory.moe_layers, memory.activations)
        time_s = sum(decode_step_seconds(w.seconds, split, coll, m) for w in works) / generate
    per_layer = memory.kv_bytes_per_token // cfg.shape.layers
    chip = ChipMemory(chip_weight_bytes(memory, split),
                      chip_cache_bytes(per_layer, resident_tokens(cfg, tokens_in_cache), batch, cfg.shape.kv_heads,
                                       split),
                      chip_activation_bytes(cfg, split, tokens // m, logit_tokens // m))
    estimate = uniform_routing_estimate(cfg, memory, tokens) if cfg.shape.experts and memory.expert_bytes else None
    compute = work.compute_bound and work.seconds / split.stage_chips >= coll.overlappable_s
    return ServingPoint(step.phase, batch, length if step.phase == "prefill" else None,
                        length if step.phase == "decode" else None, target.name, mode, cost, chip, coll, split,
                        time_s, chip.total <= target.dram_capacity, generate, estimate, compute)


def _mean(costs: list[StepCost]) -> StepCost:
    n = len(costs)
    return StepCost(costs[0].mode, sum(c.seconds for c in costs) / n, sum(c.tensor_s for c in costs) / n,
                    sum(c.vector_s for c in costs) / n, sum(c.memory_s for c in costs) / n,
                    sum(c.flops for c in costs) // n, sum(c.bytes for c in costs) // n, sum(c.macs for c in costs) // n)


def crossover_batch(step: StepModel, target: str, mode: str, context: int) -> int | None:
    """The least batch at which a decode step is compute-bound (None: memory-bound up to 2^20)."""
    def compute_bound(b: int) -> bool:
        return step.cost(b, context, target, mode).compute_bound

    if compute_bound(1):
        return 1
    hi = 2
    while not compute_bound(hi):
        if hi >= MAX_CROSSOVER_BATCH:
            return None
        hi *= 2
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if compute_bound(mid):
            hi = mid
        else:
            lo = mid
    return hi
