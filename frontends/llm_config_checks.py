"""What a Hugging Face `config.json` must be for `solar-llm` to price it, checked before anything is built or
exported: each problem is one `LlmError` line that names the field (docs/llm.md, "Bad input").

Three stages, cheapest first. `read_config` and `check_fields` import neither torch nor transformers, so the
CLI answers a broken file in a fraction of a second. `check_architecture` asks the model type's config class
(its default `head_dim`, whether it rotates positions) what transformers would refuse while constructing
it. `check_constructed` reads the constructed config, defaults filled in, against the sets transformers
itself knows: its activations (`ACT2CLS`) and RoPE types (`ROPE_INIT_FUNCTIONS`, and those its config
classes validate)."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


class LlmError(ValueError):
    """A bad config, size or option: one line for the user (the CLI exits 1)."""


DTYPE_NAMES = ("float32", "bfloat16", "float16")
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
DEFAULT_DTYPE = "bfloat16"  # a config without a dtype, or with "auto" (the weights' own dtype, unknown here)
REQUIRED_FIELDS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
# The GPT-2 lineage's names of the required sizes, as their config classes map them (GPT-J's `n_embd`, BLOOM's
# `n_layer` and `n_head`; `n_embed` the older BLOOM and Falcon files' hidden size).
FIELD_ALIASES = {"hidden_size": ("n_embd", "n_embed"), "num_hidden_layers": ("n_layer",),
                 "num_attention_heads": ("n_head",)}
EXPERT_FIELDS = ("num_local_experts", "num_experts", "n_routed_experts")
ACTIVATION_FIELDS = ("hidden_act", "hidden_activation", "activation_function")
ROPE_FIELDS = ("rope_scaling", "rope_parameters")
# torch sizes, strides and byte counts are int64: no dimension and no tensor's bytes beyond this.
INT64_MAX = 2**63 - 1
# transformers builds a model layer by layer, about a second per thousand tiny layers on the meta device: a layer
# count far beyond any real model's (a few hundred at most) is refused before the build, which would run for hours.
MAX_LAYERS = 10_000


def read_config(path: str) -> dict[str, Any]:
    """The JSON object of `path`: UTF-8 (a byte-order mark is accepted), JSON, an object."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        raise LlmError(f"{path}: cannot read: {err.strerror}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise LlmError(f"{path}:{line}:{column}: error: not UTF-8: byte 0x{data[err.start]:02x} at offset "
                       f"{err.start}") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as err:
        raise LlmError(f"{path}:{err.lineno}:{err.colno}: error: not JSON: {err.msg}") from None
    except RecursionError:
        raise LlmError(f"{path}: not JSON that can be read: nested too deeply") from None
    except ValueError as err:  # an integer of more digits than Python converts
        raise LlmError(f"{path}: not JSON that can be read: {err}") from None
    if not isinstance(raw, dict):
        raise LlmError(f"{path}: a config is a JSON object, not {type(raw).__name__}")
    return raw


def text_fields(raw: dict[str, Any]) -> dict[str, Any]:
    """The language model's fields: a multimodal config's `text_config`, else the config itself."""
    text = raw.get("text_config")
    return text if isinstance(text, dict) else raw


def standard_names(fields: dict[str, Any]) -> dict[str, Any]:
    """`fields` with each required size under its common name too, where the file uses its family's alias."""
    missing = {key: next(alias for alias in aliases if alias in fields) for key, aliases in FIELD_ALIASES.items()
               if key not in fields and any(alias in fields for alias in aliases)}
    return {**fields, **{key: fields[alias] for key, alias in missing.items()}} if missing else fields


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _count(n: int) -> str:
    """An integer, exact while short; a huge one by its power of ten."""
    digits = str(n)
    return digits if len(digits) <= 15 else f"{digits[0]}.{digits[1:3]}e{len(digits) - 1}"


def check_fields(path: str, raw: dict[str, Any], dtype: str | None = None) -> None:
    """What the file says by itself (no transformers): `model_type`, the sizes, the key-value heads, the
    experts per token, the dtype (unless `dtype`, --dtype, overrides it)."""
    if "model_type" not in raw:
        raise LlmError(f"{path}: missing field 'model_type'")
    if not isinstance(raw["model_type"], str):
        raise LlmError(f"{path}: field 'model_type' must be a name, not {raw['model_type']!r}")
    for key, value in _integers(raw):
        if not -INT64_MAX - 1 <= value <= INT64_MAX:
            raise LlmError(f"{path}: field '{key}' {_count(value)} is too large to represent: torch's sizes are "
                           "64-bit, at most 2^63 - 1")
    text = standard_names(text_fields(raw))
    for key in REQUIRED_FIELDS:
        if key not in text:
            raise LlmError(f"{path}: missing field '{key}'")
        if not _is_int(text[key]) or text[key] <= 0:
            raise LlmError(f"{path}: field '{key}' must be a positive integer, not {text[key]!r}")
    if text["num_hidden_layers"] > MAX_LAYERS:
        raise LlmError(f"{path}: field 'num_hidden_layers' {_count(text['num_hidden_layers'])} is beyond solar-llm's "
                       f"limit of {MAX_LAYERS} layers (real models have a few hundred at most)")
    if text.get("head_dim") is not None and (not _is_int(text["head_dim"]) or text["head_dim"] <= 0):
        raise LlmError(f"{path}: field 'head_dim' must be a positive integer, not {text['head_dim']!r}")
    for fields, prefix in ((text, ""), *((text.get(key), f"{key}.") for key in ROPE_FIELDS)):
        if isinstance(fields, dict) and "partial_rotary_factor" in fields:
            fraction = fields["partial_rotary_factor"]
            if not isinstance(fraction, int | float) or isinstance(fraction, bool) or not 0 < fraction <= 1:
                raise LlmError(f"{path}: field '{prefix}partial_rotary_factor' must be a fraction of the head in "
                               f"(0, 1], not {fraction!r}")
    check_kv_heads(path, text["num_attention_heads"], text.get("num_key_value_heads"))
    for key in EXPERT_FIELDS:
        if text.get(key) is not None and (not _is_int(text[key]) or text[key] < 0):
            raise LlmError(f"{path}: field '{key}' must be a number of experts, not {text[key]!r}")
    check_experts(path, text)
    name = dtype if dtype is not None else dtype_name(path, raw)
    _check_weight_bytes(path, text, DTYPE_BYTES.get(name, 4))


@dataclass(frozen=True)
class DeclaredCounts:
    """The counts a split over chips divides, as a file that passed `check_fields` declares them: None where
    the value may be its config class's default (known once transformers builds the config). The routed
    experts are never known here: a key the class does not declare (a stray `num_experts`) counts none."""

    layers: int
    heads: int
    kv_heads: int | None
    experts: int | None = None


def declared_counts(raw: dict[str, Any]) -> DeclaredCounts:
    """`DeclaredCounts` of a config file (llm_families.kv_heads reads the same field once the config is built;
    Falcon's key-value heads depend on its decoder's kind, left to it)."""
    text = standard_names(text_fields(raw))
    kv = text.get("num_key_value_heads")
    known = text.get("model_type", raw.get("model_type")) != "falcon"
    return DeclaredCounts(text["num_hidden_layers"], text["num_attention_heads"],
                          kv if known and _is_int(kv) and kv > 0 else None)


def _integers(raw: dict[str, Any]) -> Iterator[tuple[str, int]]:
    """Every integer of the config, nested ones too, with its dotted name (without recursion: JSON may nest
    deeper than Python's stack)."""
    stack: list[tuple[str, Any]] = [("", raw)]
    while stack:
        name, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((f"{name}.{key}" if name else str(key), item) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend((f"{name}[{i}]", item) for i, item in enumerate(value))
        elif _is_int(value):
            yield name, value


def check_kv_heads(path: str, heads: int, kv_heads: Any, default_of: str = "") -> None:
    """`num_key_value_heads` (None: as many as the heads) is positive and divides the attention heads: each
    key-value head serves a whole group of query heads. `default_of` names the model type when the value is
    its config class's default."""
    if kv_heads is None:
        return
    shown = f"{kv_heads!r} (the {default_of} default)" if default_of else repr(kv_heads)
    if not _is_int(kv_heads) or kv_heads <= 0:
        raise LlmError(f"{path}: field 'num_key_value_heads' must be a positive integer, not {shown}")
    if heads % kv_heads:
        raise LlmError(f"{path}: field 'num_key_value_heads' {shown} does not divide num_attention_heads {heads}: "
                       "each key-value head serves a whole group of query heads")


def check_experts(path: str, fields: Any, default_of: str = "") -> None:
    """`num_experts_per_tok` of a mixture of experts (a dict of the file's fields, or a config) is at least
    one and at most the routed experts."""
    get = fields.get if isinstance(fields, dict) else lambda key: declared(fields, key)
    experts = next(((key, get(key)) for key in EXPERT_FIELDS if _is_int(get(key)) and get(key) > 0), None)
    top_k = get("num_experts_per_tok")
    if experts is None or top_k is None:
        return
    shown = f"{top_k!r} (the {default_of} default)" if default_of else repr(top_k)
    if not _is_int(top_k) or top_k <= 0:
        raise LlmError(f"{path}: field 'num_experts_per_tok' must be a positive integer, not {shown}: each token "
                       "goes through at least one expert")
    if top_k > experts[1]:
        raise LlmError(f"{path}: field 'num_experts_per_tok' {shown} is more than the {experts[1]} experts "
                       f"({experts[0]})")


def declared(config: Any, key: str) -> Any:
    """`config.key` where its class has the field (or an alias of it): a stray key of the file, which the
    model's code never reads, is None."""
    known = key in getattr(type(config), "__dataclass_fields__", {}) or key in getattr(config, "attribute_map", {})
    return getattr(config, key, None) if known else None


def dtype_name(path: str, raw: dict[str, Any]) -> str:
    """The dtype the config's weights are priced in: its `dtype` (or the older `torch_dtype`); none, or
    "auto", is bfloat16. A dtype this tool does not price is an error, not a silent bfloat16."""
    for key in ("dtype", "torch_dtype"):
        for fields in (raw, text_fields(raw)):
            value = fields.get(key)
            if value is None:
                continue
            name = value.replace("torch.", "") if isinstance(value, str) else value
            if name == "auto":
                return DEFAULT_DTYPE
            if name not in DTYPE_NAMES:
                raise LlmError(f"{path}: field '{key}': {value!r} is not a dtype solar-llm prices (one of "
                               f"{', '.join(DTYPE_NAMES)}, or auto); --dtype chooses one")
            return str(name)
    return DEFAULT_DTYPE


def _check_weight_bytes(path: str, text: dict[str, Any], dtype_bytes: int) -> None:
    """The largest weights every decoder has (the embedding, the attention and MLP projections) fit in
    torch's 64-bit byte counts: a model built on the meta device computes them, and overflows beyond."""
    hidden, heads = text["hidden_size"], text["num_attention_heads"]
    head_dim = text["head_dim"] if _is_int(text.get("head_dim")) else max(1, hidden // heads)
    products = [("vocab_size × hidden_size", text["vocab_size"] * hidden),
                ("hidden_size × num_attention_heads × head_dim", hidden * heads * head_dim)]
    for key in ("intermediate_size", "moe_intermediate_size"):
        if _is_int(text.get(key)):
            products.append((f"hidden_size × {key}", hidden * text[key]))
    for what, elements in products:
        if elements * dtype_bytes > INT64_MAX:
            raise LlmError(f"{path}: a weight of {what} = {_count(elements)} elements is too large to represent: "
                           f"its {_count(elements * dtype_bytes)} bytes are beyond torch's 64-bit limit, 2^63 - 1")


# ---- against transformers ---------------------------------------------------------------------------


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """transformers' own warnings (an unknown RoPE type, a deprecated field) are not printed: the problem is
    reported once, as this tool's line."""
    logger = logging.getLogger("transformers")
    level = logger.level
    logger.setLevel(logging.ERROR + 1)
    try:
        yield
    finally:
        logger.setLevel(level)


def check_architecture(path: str, text: dict[str, Any], config_class: type) -> None:
    """What transformers refuses while constructing the config, named by field: without a `head_dim` (the
    file's or the class's default) the hidden size is split evenly over the heads, and rotary position
    embeddings rotate pairs of dimensions, so the rotated part of a head is even."""
    text = standard_names(text)
    hidden, heads = text["hidden_size"], text["num_attention_heads"]
    head_dim = text.get("head_dim")
    named = f"field 'head_dim' {head_dim}"
    if head_dim is None and _is_int(getattr(config_class, "head_dim", None)):
        head_dim = config_class.head_dim
        named = f"head_dim {head_dim} (the {text_model_type(text, config_class)} default)"
    if head_dim is None:
        if hidden % heads:
            raise LlmError(f"{path}: field 'hidden_size' {hidden} is not a multiple of num_attention_heads {heads} "
                           "(and no head_dim is given)")
        head_dim = hidden // heads
        named = f"head_dim {head_dim} (hidden_size {hidden} / num_attention_heads {heads})"
    if not _uses_rope(text, config_class):
        return
    fraction = _rotary_fraction(text, config_class)
    rotated = int(head_dim * fraction)
    if rotated % 2 == 0:
        return
    odd = "is odd" if rotated == head_dim else f"× partial_rotary_factor {fraction} = {rotated} rotated dimensions, odd"
    raise LlmError(f"{path}: {named} {odd}: rotary position embeddings rotate pairs of dimensions")


def text_model_type(text: dict[str, Any], config_class: type) -> str:
    return str(text.get("model_type") or getattr(config_class, "model_type", "") or config_class.__name__)


def _uses_rope(text: dict[str, Any], config_class: type) -> bool:
    fields = getattr(config_class, "__dataclass_fields__", {})
    return "rope_parameters" in fields or any(isinstance(text.get(key), dict) for key in ROPE_FIELDS)


def _rotary_fraction(text: dict[str, Any], config_class: type) -> float:
    """`partial_rotary_factor`: the file's (beside the RoPE fields or in them), else the model type's
    default, which its config class may set while constructing (GPT-NeoX: 0.25)."""
    for fields in (text, *(text.get(key) for key in ROPE_FIELDS)):
        if isinstance(fields, dict) and isinstance(fields.get("partial_rotary_factor"), int | float):
            return float(fields["partial_rotary_factor"])
    try:
        with quiet_transformers():
            default = config_class()
    except Exception:  # a class that needs arguments: the whole head rotates, as by default
        return 1.0
    params = getattr(default, "rope_parameters", None)
    value = (params or {}).get("partial_rotary_factor", getattr(default, "partial_rotary_factor", None))
    return float(value) if isinstance(value, int | float) else 1.0


def check_constructed(path: str, raw: dict[str, Any], config: Any) -> None:
    """The constructed config (the model type's defaults filled in): its activations, RoPE types, key-value
    heads and experts per token. A default is named as one."""
    from transformers.activations import ACT2CLS

    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    given = text_fields(raw)
    model_type = str(getattr(text, "model_type", "") or raw.get("model_type"))
    for key in ACTIVATION_FIELDS:
        value = getattr(text, key, None)
        if isinstance(value, str) and value not in ACT2CLS:
            raise LlmError(f"{path}: field '{key}': unknown activation '{value}' (transformers knows "
                           f"{', '.join(sorted(ACT2CLS))})")
    heads = text.num_attention_heads
    check_kv_heads(path, heads, getattr(text, "num_key_value_heads", None),
                   "" if "num_key_value_heads" in given else model_type)
    check_experts(path, text, "" if "num_experts_per_tok" in given else model_type)
    _check_rope(path, given, text)
    _check_rotary_parity(path, text)


def rope_types(config: Any) -> set[str]:
    """The RoPE types transformers can build for `config`: those with an init function, "default" (no
    scaling), and the config class's own default (an axial RoPE, for some multimodal models)."""
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    return set(ROPE_INIT_FUNCTIONS) | {"default", str(getattr(config, "default_rope_type", "default"))}


def _runtime_rope(kind: str) -> bool:
    """A RoPE whose frequencies HF recomputes in each forward pass from the longest position id, as its
    `dynamic_rope_update` does for every type named "dynamic": a branch on the data, which no exported graph
    holds. (It updates longrope's too, but on the sequence's length, which export keeps: longrope exports.)"""
    return "dynamic" in kind


def _rope_entries(text: Any) -> list[dict[str, Any]]:
    """The constructed config's RoPE parameters: one dict, or one per layer type (Gemma 3)."""
    params = getattr(text, "rope_parameters", None)
    if not isinstance(params, dict) or not params:
        return []
    nested = text.nested_rope_parameter_keys(params) if hasattr(text, "nested_rope_parameter_keys") else []
    return [entry for entry in ([params[key] for key in nested] if nested else [params]) if isinstance(entry, dict)]


def _check_rope(path: str, given: dict[str, Any], text: Any) -> None:
    field = next((key for key in ROPE_FIELDS if key in given), "rope_parameters")
    known = rope_types(text)
    for entry in _rope_entries(text):
        kind = entry.get("rope_type", entry.get("type", "default"))
        if kind not in known:
            raise LlmError(f"{path}: field '{field}': unknown rope_type {kind!r} (transformers knows "
                           f"{', '.join(sorted(known))})")
        if _runtime_rope(str(kind)):
            static = ", ".join(sorted(k for k in known if not _runtime_rope(k)))
            raise LlmError(f"{path}: field '{field}': rope_type '{kind}' cannot be exported: it recomputes its "
                           "frequencies from the largest position id at run time, a branch on the data that "
                           f"torch.export cannot hold; a static type ({static}) prices the same shapes")


def _check_rotary_parity(path: str, text: Any) -> None:
    """The rotated part of each head is even, from the fields as transformers normalised them (an alias
    such as GPT-NeoX's `rotary_pct` included): check_architecture's check where construction let it pass."""
    head_dim = getattr(text, "head_dim", None)
    if not _is_int(head_dim):
        head_dim = text.hidden_size // text.num_attention_heads
    for entry in _rope_entries(text):
        fraction = entry.get("partial_rotary_factor", 1.0)
        rotated = int(head_dim * fraction) if isinstance(fraction, int | float) else head_dim
        if rotated % 2:
            raise LlmError(f"{path}: head_dim {head_dim} × partial_rotary_factor {fraction} = {rotated} rotated "
                           "dimensions, odd: rotary position embeddings rotate pairs of dimensions")


def long_context_warning(path: str, config: Any, tokens: int) -> str | None:
    """A context longer than the model's `max_position_embeddings`: priced as asked, but the model was not
    made for it."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    most = getattr(text, "max_position_embeddings", None)
    if not _is_int(most) or tokens <= most:
        return None
    return (f"{path}: {tokens} tokens (the longest prompt, or context + generated) are beyond "
            f"max_position_embeddings {most}; priced as asked")


__all__ = ["DEFAULT_DTYPE", "DTYPE_NAMES", "INT64_MAX", "REQUIRED_FIELDS", "LlmError", "check_architecture",
           "check_constructed", "check_experts", "check_fields", "check_kv_heads", "declared", "dtype_name",
           "long_context_warning", "quiet_transformers", "read_config", "rope_types", "standard_names",
           "text_fields"]
