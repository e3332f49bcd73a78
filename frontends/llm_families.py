"""What differs between the Hugging Face families solar-llm prices from their stock `config.json`: the
attention implementation their code supports, their key-value heads, their own names for the common sizes
(GPT-J's `n_embd`, BLOOM's `n_layer`), and which of their fields are widths, so that a reduced twin for
validation is the same structure at smaller numbers (frontends/llm_validate.py)."""

from __future__ import annotations

from typing import Any

# Fields that are the width of an MLP (or of each expert's): their own size, reduced to at most the twin's.
MLP_WIDTH_FIELDS = ("intermediate_size", "moe_intermediate_size", "shared_expert_intermediate_size",
                    "ffn_dim",  # OPT
                    "ffn_hidden_size",  # Falcon
                    "n_inner")  # GPT-J, BLOOM (None: four times the hidden size, derived)
# Fields that count heads: a query head count or a key-value head count, by value.
HEAD_FIELDS = ("num_attention_heads", "num_key_value_heads", "num_kv_heads")
TOKEN_ID_FIELDS = ("bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id")
# What latent-attention configs (DeepSeek-V2/V3) derive from their widths as they are built: the query-key
# head width (qk_nope_head_dim + qk_rope_head_dim) and `head_dim` (the rotary part). to_dict writes them out,
# and from_dict would set the full model's values back over the derived ones: DeepSeek-V3's attention and
# rotary read them, so a reduced twin built so failed to run.
MLA_DERIVED_FIELDS = ("qk_head_dim", "head_dim")


def attention_implementation(config: Any) -> str:
    """SDPA where the model's code has it; eager attention where it does not, or where the config asks for
    what SDPA cannot compute (Gemma 2's attention soft-capping: a tanh between the scores and the softmax).
    Eager attention's mask is a tensor the lifting reads, so it counts the live pairs as SDPA does."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    if getattr(config, "attn_logit_softcapping", None):
        return "eager"
    try:
        model_class = MODEL_FOR_CAUSAL_LM_MAPPING[type(config)]
    except KeyError:  # no causal LM of this config: building it says so, in one line
        return "sdpa"
    return "sdpa" if getattr(model_class, "_supports_sdpa", False) else "eager"


def field_name(config: Any, key: str) -> str:
    """The config's own name of a common field (`num_hidden_layers` is BLOOM's and GPT-J's `n_layer`)."""
    return str(getattr(config, "attribute_map", {}).get(key, key))


def kv_heads(config: Any, heads: int) -> int:
    """The key-value heads a serving engine keeps in its cache. Falcon's older decoder (Falcon-7B) has one
    shared head under `multi_query` whatever `num_kv_heads` says; its new decoder (Falcon-40B) keeps
    `num_kv_heads`, though HF's code broadcasts them to every query head before its cache update
    (`kv_broadcast`)."""
    if getattr(config, "model_type", "") == "falcon":
        if getattr(config, "new_decoder_architecture", False):
            return int(getattr(config, "num_kv_heads", None) or heads)
        return 1 if getattr(config, "multi_query", False) else heads
    for key in ("num_key_value_heads", "num_kv_heads"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return heads


def kv_broadcast(config: Any, heads: int) -> int:
    """How many copies of each key-value head HF's code makes before its cache update: Falcon's new decoder
    broadcasts its `num_kv_heads` to every query head (`torch.broadcast_to`, 16 copies for Falcon-40B), so
    HF's cache holds them all; 1 elsewhere. The steps keep `kv_heads` in their cache and give the model
    them broadcast (llm_steps.py `DecodeStep`): the bound reads and writes the heads an engine keeps."""
    if getattr(config, "model_type", "") == "falcon" and getattr(config, "new_decoder_architecture", False):
        return max(1, heads // kv_heads(config, heads))
    return 1


def with_fields(config: Any, fields: dict[str, Any]) -> Any:
    """A copy of `config` with `fields` (common names or the config's own) replaced, as its class builds it."""
    values = config.to_dict()
    for key, value in fields.items():
        values[field_name(config, key)] = value
    if "qk_rope_head_dim" in values:
        for derived in MLA_DERIVED_FIELDS:
            values.pop(derived, None)
    copy = config.__class__.from_dict(values)
    copy._attn_implementation = attention_implementation(copy)
    # to_dict leaves the experts implementation out: keep the one the config asked for.
    if hasattr(config, "_experts_implementation"):
        copy._experts_implementation = config._experts_implementation
    return copy


def _even_part(part: int, whole: int, reduced_whole: int) -> int:
    """`part` of `whole` scaled to `reduced_whole`, even and at least 2 (a rotated part rotates pairs)."""
    return max(2, (reduced_whole * part // whole) // 2 * 2)


def twin_fields(config: Any, heads: int, kv: int, head_dim: int, hidden: int,
                sizes: dict[str, int]) -> dict[str, tuple[Any, Any]]:
    """Every width field of `config` (its own names, only those it has) with its reduced value, given the
    reduced `sizes` of the common dimensions (`num_hidden_layers`, `num_attention_heads`, key-value heads as
    `kv_heads`, `head_dim`, `hidden_size`, `vocab_size`, the MLP width as `mlp`): field -> (full, reduced)."""
    own = config.to_dict()
    out: dict[str, tuple[Any, Any]] = {}

    def put(key: str, value: Any) -> None:
        name = field_name(config, key)
        if name in own and own[name] is not None:
            out[name] = (own[name], value)

    for key in ("num_hidden_layers", "vocab_size", "hidden_size"):
        put(key, sizes[key])
    if isinstance(own.get("head_dim"), int):  # a field of its own (Gemma, Qwen3); else hidden / heads
        put("head_dim", sizes["head_dim"])
    for key in HEAD_FIELDS:  # a head count is the query heads' or the key-value heads', by its value
        value = own.get(field_name(config, key))
        if isinstance(value, int):
            put(key, sizes["num_attention_heads"] if value == heads else sizes["kv_heads"] if value == kv
                else min(value, sizes["kv_heads"]))
    for key in MLP_WIDTH_FIELDS:  # at most the twin's width, but as much wider than the hidden size as it was
        if isinstance(own.get(key), int):
            put(key, min(own[key], max(sizes["mlp"], sizes["hidden_size"] * own[key] // hidden)))
    proj = own.get("word_embed_proj_dim")  # OPT: embeddings projected to the hidden size where they differ
    if isinstance(proj, int):
        put("word_embed_proj_dim", sizes["hidden_size"] if proj == hidden
            else max(1, min(sizes["hidden_size"] - 1, sizes["hidden_size"] * proj // hidden)))
    rotary = own.get("rotary_dim")  # GPT-J: the rotated part of each head
    if isinstance(rotary, int) and rotary > 0:
        put("rotary_dim", sizes["head_dim"] if rotary >= head_dim else _even_part(rotary, head_dim, sizes["head_dim"]))
    # Latent attention (DeepSeek's MLA): the per-head parts as the twin's heads, the rotated part even, and
    # the latent ranks as much narrower than the hidden size as they were (each projection keeps its side).
    for key in ("qk_nope_head_dim", "v_head_dim"):
        if isinstance(own.get(key), int):
            put(key, min(own[key], sizes["head_dim"]))
    if isinstance(own.get("qk_rope_head_dim"), int):
        put("qk_rope_head_dim", min(own["qk_rope_head_dim"], max(2, sizes["head_dim"] // 4 * 2)))
    for key in ("kv_lora_rank", "q_lora_rank"):
        if isinstance(own.get(key), int):
            put(key, min(own[key], max(2, sizes["hidden_size"] * own[key] // hidden)))
    for key in TOKEN_ID_FIELDS:  # special tokens inside the reduced vocabulary (they shape no computation)
        value = own.get(key)
        if isinstance(value, int) and value >= sizes["vocab_size"]:
            out[key] = (value, value % sizes["vocab_size"])
        elif isinstance(value, list) and any(isinstance(v, int) and v >= sizes["vocab_size"] for v in value):
            out[key] = (value, [v % sizes["vocab_size"] if isinstance(v, int) else v for v in value])
    return out


def repeating_twins(kinds: Any, total: int) -> tuple[int, int] | None:
    """Twins one period apart where the layers, past a prefix of their own (DeepSeek's dense first layers),
    repeat a pattern of kinds (every layer alike: a period of 1; Gemma 2's sliding and full layers
    alternating, Gemma 3's five sliding to one full): `a` and `a + p` layers for the body's period `p`, where
    `a` holds the prefix and at least two of the body's layers (and a whole period), and leaves whole periods
    to the full model. The full model is then the first twin and (total − a)/p times the twins' difference
    (one period of the body), so that each kind of layer is counted exactly as often as the model has it.
    The smallest such twins over every prefix; None where the model is no larger than the second twin."""
    if not isinstance(kinds, list) or len(kinds) != total or not total:
        return None
    ids: dict[Any, int] = {}
    kind = [ids.setdefault(k, len(ids)) for k in kinds]  # small numbers: the search compares many pairs
    best: tuple[int, int] | None = None
    for prefix in range(total):
        if best is not None and prefix + 3 >= best[1]:  # no twin past this prefix is smaller
            break
        body = kind[prefix:]
        period = next(p for p in range(1, len(body) + 1)
                      if all(body[i] == body[i - p] for i in range(p, len(body))))
        least = prefix + max(period, 2)
        first = least + (total - least) % period
        if first + period < total and (best is None or first + period < best[1]):
            best = (first, first + period)
    return best


def returned_cache(out: Any) -> Any:
    """The cache a forward pass returns: `cache` in transformers 5 (its `past_key_values` warns that the name
    is deprecated), `past_key_values` before."""
    for name in ("cache", "past_key_values"):
        if name in out.keys():  # noqa: SIM118 (the output's own fields: `in out` maps the old name to the new)
            return out[name]
    # Reformer keeps its own cache (hash buckets and states), which no server's KV cache is.
    raise TypeError(f"{type(out).__name__} holds no transformers Cache (the model keeps a cache of its own "
                    "kind): solar-llm prices models whose steps update a transformers Cache")



__all__ = ["HEAD_FIELDS", "MLP_WIDTH_FIELDS", "TOKEN_ID_FIELDS", "attention_implementation", "field_name",
           "kv_broadcast", "kv_heads", "repeating_twins", "returned_cache", "twin_fields",
           "with_fields"]
