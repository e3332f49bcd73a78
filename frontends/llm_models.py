"""Language models as servers run them, from a Hugging Face `config.json`: the model built on the meta
device (no weights), and its prefill and decode steps exported to SIR with batch, prompt and context as size
parameters (docs/llm.md).

- **prefill**: `ids[B, S]` against an empty `DynamicCache` (its first `cat` appends to an empty tensor); only
  the last position's logits, as `generate` computes them, unless `all_logits`.
- **decode**: `ids[B, 1]` against a cache of `P` tokens per layer, given as one argument per layer's keys
  and values (`cache_0`, `cache_1`, ...: `[B, kv_heads, P, head_dim]`) and appended to in place
  (`solar.concat {append = true}`): a server keeps the cache allocated with room and never copies it.

Both steps return the logits and the keys and values they add to the cache, so what the cache gains is
written once.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import sympy
import torch
from torch.export import Dim

from solar.ir import attr_names
from solar.ir.ops import ConcatOp, ConstantOp, ModuleOp, ScatterOp, Value

from .diagnostics import TranslationError
from .llm_config_checks import (
    DTYPE_NAMES,
    REQUIRED_FIELDS,
    LlmError,
    check_architecture,
    check_constructed,
    check_fields,
    declared,
    dtype_name,
    quiet_transformers,
    read_config,
    text_fields,
)
from .llm_families import attention_implementation, kv_heads, repeating_twins, with_fields
from .llm_layer_kinds import layer_kinds
from .llm_mla import cache_dims as layer_cache_dims
from .llm_mla import latent_token_bytes
from .llm_steps import DecodeStep, PrefillStep, StaticDecodeStep
from .lowering.core import LoweringError
from .torch_export import lower_exported
from .torch_mla import absorb_latent_attention
from .torch_problem import quiet_framework

PHASES = ("prefill", "decode")
CACHES = ("dynamic", "static")
DTYPES = {name: getattr(torch, name) for name in DTYPE_NAMES}
CONTEXT_PARAM = "CONTEXT"  # the decode step's cached tokens per sequence, as a size parameter
# Config fields that make layers differ from each other: a twin with fewer layers would not scale.
_HETEROGENEOUS = ("layer_types", "mlp_only_layers", "first_k_dense_replace", "decoder_sparse_step")


@dataclass(frozen=True)
class LlmShape:
    """What the serving figures need of a config, read once."""

    model_type: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    dtype: torch.dtype
    experts: int = 0  # routed experts per MoE layer (0: dense)
    top_k: int = 0
    sliding_window: int | None = None
    kv_token_bytes: int | None = None  # measured from the cache inputs (KernelBench-style files)

    @property
    def dtype_bytes(self) -> int:
        return torch.empty((), dtype=self.dtype, device="meta").element_size()

    @property
    def kv_bytes_per_token(self) -> int:
        """Keys and values of one token over every layer."""
        if self.kv_token_bytes is not None:
            return self.kv_token_bytes
        return 2 * self.layers * self.kv_heads * self.head_dim * self.dtype_bytes


@runtime_checkable
class ModelSource(Protocol):
    """A model given as code rather than as a config (a KernelBench-style file, frontends/llm_kernelbench.py):
    it builds itself and exports its own steps."""

    def build(self, dtype: torch.dtype) -> torch.nn.Module: ...

    def export(self, phase: str, batch: int, length: int, all_logits: bool = False) -> PhaseExport: ...


@dataclass
class LlmConfig:
    path: str
    raw: dict[str, Any]
    config: Any  # a transformers PretrainedConfig
    shape: LlmShape
    cache: str = "dynamic"  # the cache class the steps use: "dynamic" (DynamicCache) or "static" (StaticCache)
    source: ModelSource | None = None  # a model given as code: it builds and exports itself
    _twins: list[tuple[int, int] | None] = field(default_factory=list, init=False, repr=False, compare=False)

    def with_layers(self, layers: int) -> Any:
        """The config with `layers` decoder layers (a twin for scaled analysis)."""
        fields: dict[str, Any] = {"num_hidden_layers": layers}
        types = self.config.to_dict().get("layer_types")
        if isinstance(types, list):  # derived per layer (Qwen2-MoE): as many as the layers
            fields["layer_types"] = types[:layers]
        return with_fields(self.config, fields)

    def twin_layers(self) -> tuple[int, int] | None:
        """The layers of the two twins that price the model (bench/llm_serving.py scales the counts between
        them), or None: every layer is exported. Alike layers give twins of 2 and 3 layers; otherwise each
        layer's kind is read from the model built on meta (frontends/llm_layer_kinds.py), and the twins keep
        a prefix of differing layers and a whole period of the repeating body (`repeating_twins`), checked
        to be the model's first layers kind for kind."""
        if not self._twins:
            self._twins.append(self._find_twins())
        return self._twins[0]

    def _find_twins(self) -> tuple[int, int] | None:
        total = self.shape.layers
        if self.source is not None:
            return None  # code, not a config: no twin with fewer layers can be made
        if self.layers_alike:
            return repeating_twins([0] * total, total)
        kinds = self._layer_kinds(self.config)
        twins = repeating_twins(kinds, total)
        if twins is None or any(self._layer_kinds(self.with_layers(n)) != kinds[:n] for n in twins):
            return None
        return twins

    def _layer_kinds(self, config: Any) -> list[Any] | None:
        return layer_kinds(build_model(config, self.shape.dtype, self.path), config, sliding_layers(config, self.cache))

    @property
    def layers_alike(self) -> bool:
        """Every decoder layer is the same computation, so costs grow by one layer's per layer."""
        if self.source is not None:
            return False  # code, not a config: no twin with fewer layers can be made
        # The constructed config's fields too: Gemma 2 and 3 derive their sliding and full layers' pattern.
        fields = {**text_fields(self.raw), **{k: v for k, v in self.config.to_dict().items() if v is not None}}
        for key in _HETEROGENEOUS:
            value = fields.get(key)
            if key == "layer_types" and isinstance(value, list) and len(set(value)) > 1:
                return False
            if key in ("mlp_only_layers",) and value:
                return False
            if key in ("first_k_dense_replace",) and value:
                return False
            if key == "decoder_sparse_step" and isinstance(value, int) and value > 1:
                return False
        return True


def load_config(path: str, dtype: str | None = None, cache: str = "dynamic") -> LlmConfig:
    """Reads a `config.json` (nothing is downloaded) and checks what the analysis needs, each problem one line
    that names the field (frontends/llm_config_checks.py), before anything is built or exported."""
    if cache not in CACHES:
        raise LlmError(f"--cache {cache}: expected {' or '.join(CACHES)}")
    if dtype is not None and dtype not in DTYPES:
        raise LlmError(f"--dtype {dtype}: expected one of {', '.join(DTYPES)}")
    raw = read_config(path)
    check_fields(path, raw, dtype)
    from transformers import CONFIG_MAPPING  # the transformers import is slow: only once a config is read

    model_type = raw["model_type"]
    if model_type not in CONFIG_MAPPING:
        raise LlmError(f"{path}: unknown model_type '{model_type}' (transformers knows "
                       f"{len(list(CONFIG_MAPPING.keys()))} types, such as llama, mistral, mixtral, qwen2_moe)")
    text_raw = text_fields(raw)
    check_architecture(path, text_raw, _text_config_class(CONFIG_MAPPING, model_type, text_raw is not raw,
                                                          text_raw))
    # The dtype is the model's to build in (below), not the config's: "auto" or an alias is no torch dtype.
    fields = {k: v for k, v in raw.items() if k not in ("model_type", "dtype", "torch_dtype")}
    try:
        with quiet_transformers():
            config = CONFIG_MAPPING[model_type](**fields)
    except Exception as err:  # transformers' own validation (strict dataclass fields and validators)
        raise LlmError(f"{path}: transformers refuses the config: {_one_line(err)}") from None
    if text_raw is not raw:  # a multimodal config: priced as its language model (the text decoder serves tokens)
        config, model_type = _text_config(path, model_type, config)
    check_constructed(path, raw, config)
    config._attn_implementation = attention_implementation(config)
    shape = _shape(config, model_type, DTYPES[dtype or dtype_name(path, raw)])
    return LlmConfig(path, raw, config, shape, cache)


def _text_config_class(mapping: Any, model_type: str, nested: bool, text_raw: dict[str, Any]) -> type:
    """The config class of the language model: a multimodal config's text model's own class."""
    if not nested:
        return mapping[model_type]
    text_type = text_raw.get("model_type")
    if isinstance(text_type, str) and text_type in mapping:
        return mapping[text_type]
    sub = getattr(mapping[model_type], "sub_configs", {}).get("text_config")
    return sub if isinstance(sub, type) else mapping[model_type]


def _text_config(path: str, model_type: str, config: Any) -> tuple[Any, str]:
    """The language model's config of a multimodal config (Mistral 3, LLaVA, Gemma 3) and its model type; a
    model type that holds no language model in `text_config` is refused."""
    from transformers import PretrainedConfig

    text = config.get_text_config()
    if text is config or not isinstance(text, PretrainedConfig):
        raise LlmError(f"{path}: model_type '{model_type}' has no language model in 'text_config' (a multimodal "
                       "config such as mistral3 or llava holds one there): give the language model's own config")
    return text, str(text.model_type)


def _one_line(err: Exception) -> str:
    """An exception's message on one line (transformers' validation errors span several)."""
    return "; ".join(line.strip() for line in str(err).splitlines() if line.strip()) or type(err).__name__


def _shape(cfg: Any, model_type: str, dtype: torch.dtype) -> LlmShape:
    heads = cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    window = getattr(cfg, "sliding_window", None)
    experts = declared(cfg, "num_local_experts") or declared(cfg, "num_experts") or 0
    shape = LlmShape(model_type, cfg.num_hidden_layers, cfg.hidden_size, heads, kv_heads(cfg, heads), head_dim,
                     cfg.vocab_size, dtype,
                     int(experts), int(declared(cfg, "num_experts_per_tok") or 0) if experts else 0,
                     int(window) if isinstance(window, int) and window > 0 else None)
    latent = latent_token_bytes(cfg, shape.layers, shape.dtype_bytes)  # MLA: the cache holds the latent
    return shape if latent is None else dataclasses.replace(shape, kv_token_bytes=latent)


def build_model(config: Any, dtype: torch.dtype, path: str = "") -> torch.nn.Module:
    """The causal LM of `config` on the meta device (no memory, no weights), in `dtype`, for inference. What
    transformers raises while building it (a config it constructed but cannot build a model of: an unknown
    experts implementation, a RoPE field of the wrong kind, a negative size) is an LlmError naming `path`."""
    if isinstance(config, ModelSource):
        return config.build(dtype)
    from transformers import AutoModelForCausalLM

    prefix = f"{path}: " if path else ""
    try:
        with torch.device("meta"), quiet_transformers():
            model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    except RuntimeError as err:
        if "overflow" not in str(err):
            raise LlmError(f"{prefix}{_cannot_build(err)}") from None
        # Sizes the config checks let through whose product is still beyond torch's int64 byte counts.
        raise LlmError(f"{prefix}a weight of the model is too large to represent: {str(err).splitlines()[0]} "
                       "(torch's byte counts are 64-bit, at most 2^63 - 1)") from None
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, ArithmeticError) as err:
        # Only transformers' code runs in the call above: its failure is the config's, not a bug of SOLAR's.
        raise LlmError(f"{prefix}{_cannot_build(err)}") from None
    return model.eval()


def _cannot_build(err: Exception) -> str:
    first = str(err).strip().splitlines()[0] if str(err).strip() else ""
    return f"transformers cannot build a model from this config: {type(err).__name__}: {first}".rstrip(": ")


def weight_bytes(model: torch.nn.Module) -> int:
    """Bytes of every parameter (tied embeddings once)."""
    seen: set[int] = set()
    total = 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel() * p.element_size()
    return total


# ---- the two steps: frontends/llm_steps.py ------------------------------------------------------


def sliding_layers(config: Any, cache: str = "static") -> list[bool]:
    """Which layers HF's cache class (`StaticCache`, or `DynamicCache` for "dynamic") keeps as a sliding
    window: a ring of W slots, or the last W − 1 tokens. HF derives it from `layer_types`, `sliding_window`
    or a model's own fields (Qwen2's `max_window_layers`): its cache's layers say it."""
    from transformers import DynamicCache, StaticCache

    made = DynamicCache(config=config) if cache == "dynamic" else StaticCache(config=config, max_cache_len=1)
    return [bool(getattr(layer, "is_sliding", False)) for layer in made.layers]


@dataclass
class PhaseExport:
    """One step exported: the module and which size parameter is the batch, the prompt or the context."""

    phase: str
    module: ModuleOp
    layers: int
    sizes: dict[str, str] = field(default_factory=dict)  # "batch"/"prompt"/"context" -> parameter name
    appends: int = 0  # concats and scatters marked as in-place cache updates
    # The least value of each size (keys as `sizes`) the export holds for: a branch the model took on its
    # sizes (a sliding window shorter than the context) is a guard that raises it above export's default 2.
    minimums: dict[str, int] = field(default_factory=dict)
    # The greatest value, where a guard bounds it (a static cache's sliding ring before it fills: P < W; a
    # dynamic sliding cache below its window). A length export specialised has its least and greatest value
    # equal, and is no key of `sizes`: the step holds at that length alone.
    maximums: dict[str, int] = field(default_factory=dict)
    absorbed: int = 0  # latent attentions rewritten in their absorbed form (frontends/torch_mla.py)


# Steps exported in this process, by what determines them (the config's contents, dtype, cache class, phase,
# example sizes, layers, logits kept, batch symbolic): a sweep, a report and a test module export each once.
_EXPORTS: dict[tuple[Any, ...], PhaseExport] = {}
_EXPORTS_KEPT = 32


def export_phase(cfg: LlmConfig, phase: str, batch: int, length: int, layers: int,
                 all_logits: bool = False, batch_symbolic: bool = True, absorbed: bool | None = None) -> PhaseExport:
    """Exports one step of a `layers`-layer twin at an example size (every size stays a parameter, but the
    batch when not `batch_symbolic`: then `batch` is a number of the IR). Latent attention is `absorbed`
    (frontends/torch_mla.py) where asked, by default in a decode step only. A step exported before in this
    process is reused: the result is shared, so callers copy its module before changing it (as `lifted` does)."""
    if phase not in PHASES:
        raise LlmError(f"unknown phase '{phase}': expected prefill, decode or both")
    if cfg.source is not None:
        return cfg.source.export(phase, batch, length, all_logits)
    key = (json.dumps(cfg.raw, sort_keys=True, default=str), str(cfg.shape.dtype), cfg.cache, phase, batch, length,
           layers, all_logits, batch_symbolic, absorbed)
    if key not in _EXPORTS:
        if len(_EXPORTS) >= _EXPORTS_KEPT:
            del _EXPORTS[next(iter(_EXPORTS))]
        _EXPORTS[key] = _export_phase(cfg, phase, batch, length, layers, all_logits, batch_symbolic,
                                      phase == "decode" if absorbed is None else absorbed)
    return _EXPORTS[key]


def _export_phase(cfg: LlmConfig, phase: str, batch: int, length: int, layers: int, all_logits: bool,
                  batch_symbolic: bool, absorbed: bool) -> PhaseExport:
    shape = cfg.shape
    config = cfg.with_layers(layers)
    lm = build_model(config, shape.dtype, cfg.path)
    auto = Dim.AUTO
    static = cfg.cache == "static"
    with torch.device("meta"):
        ids = torch.zeros(batch, 1 if phase == "decode" else length, dtype=torch.long)
        if phase == "prefill":
            model: torch.nn.Module = PrefillStep(lm, config, all_logits, cfg.cache)
            args: tuple[Any, ...] = (ids,)
            dynamic: dict[str, Any] = {"ids": {0: auto, 1: auto} if batch_symbolic else {1: auto}}
        else:
            # A static cache has a slot for the new token beyond the context (its size its own parameter); a
            # sliding layer's ring has its window's W slots, a number.
            slots = length + 1 if static else length
            rings = sliding_layers(config) if static and shape.sliding_window else [False] * layers
            windows = [shape.sliding_window if ring else None for ring in rings for _ in range(2)]
            # The kept heads, also where HF's code broadcasts them (`kv_broadcast`; llm_steps.keep_heads_in).
            widths = layer_cache_dims(config, shape.kv_heads, shape.head_dim) * layers  # keys', values', ...
            cache = [torch.zeros(batch, heads, window or slots, width, dtype=shape.dtype)
                     for window, (heads, width) in zip(windows, widths, strict=True)]
            cache_dims = [{0: auto} if window else {0: auto, 2: auto} for window in windows]
            if static:
                model = StaticDecodeStep(lm, config)
                args = (ids, torch.arange(length), cache)
                dynamic = {"ids": {0: auto}, "positions": {0: auto}, "cache": cache_dims}
            else:
                model = DecodeStep(lm, config)
                args = (ids, cache)
                dynamic = {"ids": {0: auto}, "cache": cache_dims}
    try:
        with quiet_framework():
            ep = torch.export.export(model, args, dynamic_shapes=dynamic)
    except Exception as err:
        raise _export_problem(err, cfg) from None
    absorptions = absorb_latent_attention(ep) if absorbed else 0  # latent attention (frontends/torch_mla.py)
    # Every layer's cache is one context: named so, it is one size parameter even where export kept the
    # layers' lengths apart (a sliding-window layer reads only the last W − 1 of its cache's P tokens).
    names = ({(1 + k, 2): CONTEXT_PARAM for k in range(2 * layers)} if phase == "decode" and not static else None)
    try:
        translation = lower_exported(ep, f"{shape.model_type}_{phase}", names)
    except (TranslationError, LoweringError) as err:
        hint = ""
        if shape.experts and "grouped_mm" in str(err):
            hint = ("\nthis grouped experts kernel's groups are not counted from sorted expert ids as transformers "
                    "counts them (frontends/torch_grouped_experts.py); \"experts_implementation\": \"batched_mm\" "
                    "in the config puts every token through its top-k experts as one batched product")
        raise LlmError(str(err).rstrip() + hint) from None
    module = translation.module
    if phase == "prefill" and module.entry is not None:  # the logits, then each layer's keys and values
        module.entry.attrs[attr_names.KV_CACHE_RESULTS] = list(range(1, len(module.entry.result_types)))
    sizes = _size_names(translation.param_dims, phase, static)
    cache_args = {v for v in module.entry.args if v.name.startswith("cache")} if module.entry else set()
    minimums = {key: translation.param_min.get(name, 1) for key, name in sizes.items()}
    length_key = "prompt" if phase == "prefill" else "context"
    if phase == "prefill":
        holders = [("ids", 1)]
    elif static:
        holders = [("positions", 0)]
    else:  # every layer's cache holds the context: a sliding layer's guards bound it apart from a full one's
        holders = [(n.name, 2) for n in ep.graph.nodes if n.op == "placeholder" and n.name.startswith("cache")]
    least, most = _length_range(ep, holders)
    minimums[length_key] = least
    maximums = {length_key: most} if most is not None else {}
    return PhaseExport(phase, module, layers, sizes, mark_in_place(module, cache_args, static and phase == "prefill"),
                       minimums, maximums, absorptions)


def _length_range(ep: torch.export.ExportedProgram, holders: list[tuple[str, int]]) -> tuple[int, int | None]:
    """The values of the length (the sizes `holders`: input name and dimension) that export's guards allow:
    the greatest least value and the least greatest one over the holders (None: unbounded). A length export
    specialised (a sliding window's boundary, where the model's branch and its slice meet) is a number:
    the export holds for that length alone."""
    least, most = 1, None
    places = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    for name, dim in holders:
        node = places.get(name)
        if node is None:
            continue
        size = node.meta["val"].shape[dim]
        expr = size.node.expr if isinstance(size, torch.SymInt) else sympy.Integer(size)
        if expr.is_number:  # specialised (a SymInt may hold a number too)
            low, high = int(expr), int(expr)
        else:
            bounds = ep.range_constraints.get(expr)
            if bounds is None:
                continue
            low = int(bounds.lower) if isinstance(bounds.lower, sympy.Integer) else 1
            high = int(bounds.upper) if isinstance(bounds.upper, sympy.Integer) else None
        least = max(least, low)
        if high is not None:
            most = high if most is None else min(most, high)
    return least, most


def _size_names(param_dims: dict[str, list[tuple[int, int]]], phase: str, static: bool = False
                ) -> dict[str, str]:
    """Which parameter sizes the batch (ids dim 0), the prompt (ids dim 1) or the context (cache dim 2; with
    a static cache the length of `positions`, input 1, and the cache's slots are `cache_slots`)."""
    out: dict[str, str] = {}
    first_cache = 2 if static else 1
    for name, where in param_dims.items():
        if (0, 0) in where:
            out["batch"] = name
        if phase == "prefill" and (0, 1) in where:
            out["prompt"] = name
        if phase == "decode" and static and (1, 0) in where:
            out["context"] = name
        if phase == "decode" and any(k >= first_cache and d == 2 for k, d in where):
            out["cache_slots" if static else "context"] = name
    return out


def _base(v: Value) -> Value:
    while v.owner is not None and v.owner.is_view and v.owner.operands:
        v = v.owner.operands[0]
    return v


def mark_in_place(module: ModuleOp, cache_args: set[Value], fresh_static: bool = False) -> int:
    """Cache updates happen in place (servers preallocate the cache): a concat onto a cache argument is an
    append, a store (`index_copy_`: a scatter without reduction) into one is an in-place scatter, and so is
    one into a fresh static cache (its zeros, when `fresh_static`). A scatter is marked only where it is the
    buffer's one reader, so that no one needs the values it overwrites."""
    func = module.entry
    if func is None:
        return 0
    readers: dict[Value, int] = {}
    for op in func.walk():
        for v in op.operands:
            readers[v] = readers.get(v, 0) + 1
    marked = 0
    for op in func.walk():
        if isinstance(op, ConcatOp) and op.args and _base(op.args[0]) in cache_args:
            op.attrs["append"] = True
            marked += 1
        elif isinstance(op, ScatterOp) and _stores(op) and readers.get(op.args[0]) == 1:
            dest = op.args[0]
            if dest in cache_args or (fresh_static and isinstance(dest.owner, ConstantOp)):
                op.attrs["in_place"] = True
                marked += 1
    return marked


def _stores(op: ScatterOp) -> bool:
    reduce = op.attrs.get("reduce")
    return reduce is None or getattr(reduce, "name", reduce) == "none"


_DATA_DEPENDENT = re.compile(r"data-dependent|GuardOnDataDependentSymNode|nonzero|Could not guard", re.I)


def _export_problem(err: Exception, cfg: LlmConfig) -> LlmError:
    """Export's failure, located at the model's line. An eager mixture of experts loops over the experts
    its routing hit, which no static graph holds: say which config option exports instead."""
    frame = _model_frame(err)
    where = f"{frame[0]}:{frame[1]}: error: " if frame else f"{cfg.path}: "
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    if cfg.shape.experts and _DATA_DEPENDENT.search(str(err)):
        return LlmError(f"{where}the eager experts loop over the experts the routing hit (data-dependent) "
                        "and cannot export; set \"experts_implementation\": \"batched_mm\" in the config "
                        "(every token through its top-k experts as one batched product)")
    return LlmError(f"{where}torch.export failed: {first}")


def _model_frame(err: BaseException) -> tuple[str, int] | None:
    """The innermost frame of the error inside transformers' model code (modeling_*.py)."""
    best: tuple[str, int] | None = None
    for fr in traceback.extract_tb(err.__traceback__):
        if os.path.basename(fr.filename).startswith("modeling_") and fr.lineno is not None:
            best = (fr.filename, fr.lineno)
    text = str(err)
    if best is None:
        m = re.search(r'File "([^"]*modeling_[^"]*\.py)", line (\d+)', text)
        if m:
            best = (m.group(1), int(m.group(2)))
    return best


def check_sizes(values: dict[str, Sequence[int]]) -> None:
    for name, vals in values.items():
        for v in vals:
            if v <= 0:
                raise LlmError(f"--{name} {v}: sizes must be positive")


__all__ = ["CACHES", "PHASES", "REQUIRED_FIELDS", "LlmConfig", "LlmError", "LlmShape", "LoweringError", "ModelSource",
           "PhaseExport", "build_model", "check_sizes", "export_phase", "load_config", "mark_in_place",
           "sliding_layers", "weight_bytes"]
