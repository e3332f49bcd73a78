"""A checkpoint's `quantization_config` as the --quantize options that analyse it as shipped (GPTQ, AWQ,
bitsandbytes, FP8 and MXFP4 checkpoints, compressed-tensors; docs/quantization.md)."""

from __future__ import annotations

import re
from typing import Any

from solar.passes.quantize_formats import (
    CACHE_CODES,
    FORMATS,
    QuantizeError,
    QuantizeOptions,
    check_options,
    excluded,
)

from .llm_config_checks import LlmError

# What every checkpoint format leaves unquantized unless it says otherwise: the output projection.
DEFAULT_EXCLUDE = ("lm_head",)


def config_quantization(raw: dict[str, Any], path: str = "config.json") -> QuantizeOptions | None:
    """The options a config's `quantization_config` selects; None when it has none. A scheme SOLAR does not
    model is one LlmError naming the field."""
    qc = raw.get("quantization_config")
    if qc is None:
        text = raw.get("text_config")
        qc = text.get("quantization_config") if isinstance(text, dict) else None
    if qc is None:
        return None
    if not isinstance(qc, dict):
        raise LlmError(f"{path}: quantization_config must be an object")
    method = str(qc.get("quant_method", "")).lower()
    where = f"{path}: quantization_config"
    exclude = _excluded(qc.get("modules_to_not_convert") or qc.get("ignore") or [])
    if method in ("gptq", "awq"):
        bits = qc.get("bits", qc.get("w_bit", 4))
        weights = {4: "int4", 8: "int8"}.get(bits)
        if weights is None:
            raise LlmError(f"{where}: {method} with {bits} bits is not modelled (4 or 8)")
        group = int(qc.get("group_size", qc.get("q_group_size", 128)))
        zero = bool(qc.get("zero_point", True)) if method == "awq" else not bool(qc.get("sym", True))
        options = QuantizeOptions(weights, max(group, 0), zero_point=zero, exclude=exclude)
    elif method == "bitsandbytes":
        if qc.get("load_in_4bit"):
            # NF4/FP4 codes in blocks of 64 with their absmax scales (bitsandbytes' default block size).
            options = QuantizeOptions("int4", 64, exclude=exclude)
        elif qc.get("load_in_8bit"):
            options = QuantizeOptions("int8", 0, exclude=exclude)
        else:
            raise LlmError(f"{where}: bitsandbytes without load_in_4bit or load_in_8bit quantizes nothing")
    elif method in ("fp8", "fbgemm_fp8"):
        block = qc.get("weight_block_size")
        group, rows = (int(block[-1]), int(block[0])) if isinstance(block, list) and len(block) == 2 else (0, 0)
        activations = "fp8" if method == "fbgemm_fp8" or qc.get("activation_scheme") in ("dynamic", "static") \
            else "none"
        options = QuantizeOptions("fp8", group, activations=activations, exclude=exclude, block_rows=rows)
    elif method == "mxfp4":
        options = QuantizeOptions("mxfp4", exclude=exclude)
    elif method == "compressed-tensors":
        options = _compressed_tensors(qc, where, exclude)
    else:
        raise LlmError(f"{where}: quant_method '{qc.get('quant_method')}' is not modelled (gptq, awq, "
                       "bitsandbytes, fp8, fbgemm_fp8, mxfp4, compressed-tensors)")
    try:
        check_options(options)
    except QuantizeError as err:
        raise LlmError(f"{where}: {err}") from None
    return options


def _compressed_tensors(qc: dict[str, Any], where: str, exclude: tuple[str, ...]) -> QuantizeOptions:
    groups = [g for g in (qc.get("config_groups") or {}).values() if isinstance(g, dict)]
    if not groups:
        raise LlmError(f"{where}: compressed-tensors without config_groups quantizes nothing")
    scheme = groups[0]
    w = scheme.get("weights") or {}
    a = scheme.get("input_activations") or {}
    fmt = str(qc.get("format", "")).lower()
    bits, kind = w.get("num_bits"), str(w.get("type", "int")).lower()
    if kind == "float" and bits == 4:
        weights = "mxfp4" if "mxfp4" in fmt else "nvfp4"
    elif kind == "float" and bits == 8:
        weights = "fp8"
    elif kind == "int" and bits in (4, 8):
        weights = "int4" if bits == 4 else "int8"
    else:
        raise LlmError(f"{where}: weights of {bits} bits, type {kind} are not modelled")
    strategy = str(w.get("strategy", "channel")).lower()
    group = int(w.get("group_size") or 0) if strategy in ("group", "tensor_group", "block") else 0
    if weights in ("nvfp4", "mxfp4"):
        group = 0
    activations = "none"
    if a:
        kind_a = str(a.get("type", "")).lower()
        if a.get("num_bits") == 8 and kind_a == "float":
            activations = "fp8"
        elif a.get("num_bits") == 4 and kind_a == "float" and weights in ("nvfp4", "mxfp4"):
            activations = weights  # W4A4: the activations in the weights' fp4 format
        elif a.get("num_bits") == 8 and kind_a == "int" and weights == "int8":
            activations = "int8"  # W8A8 (SmoothQuant-style): int8 codes of both operands
        else:
            raise LlmError(f"{where}: input activations of {a.get('num_bits')} bits, type {a.get('type')} are not "
                           "modelled (fp8, fp4 with fp4 weights, int8 with int8 weights)")
    kv = qc.get("kv_cache_scheme") or {}
    kv_cache = "none"
    if kv:
        kv_cache = {("float", 8): "fp8", ("int", 8): "int8", ("int", 4): "int4"}.get(
            (str(kv.get("type", "float")).lower(), kv.get("num_bits")), "")
        if not kv_cache:
            raise LlmError(f"{where}: a KV cache of {kv.get('num_bits')} bits, type {kv.get('type')} is not modelled")
    zero = kind == "int" and not bool(w.get("symmetric", True))
    return QuantizeOptions(weights, group, kv_cache, activations, zero, exclude)


def _excluded(modules: Any) -> tuple[str, ...]:
    """Module names (`lm_head`, `model.layers.0.mlp.gate`, `re:.*lm_head`) as parts of the IR's argument
    names (`p_lm_lm_head_weight`): dots become underscores, a regular expression keeps its literal tail."""
    names = list(DEFAULT_EXCLUDE)
    for m in modules if isinstance(modules, list) else []:
        text = str(m)
        if text.startswith("re:"):
            text = re.split(r"[.*^$\\\[\]()+?|]+", text[3:].rstrip("$"))[-1]
        text = text.replace(".", "_")
        if text and text not in names:
            names.append(text)
    return tuple(names)


def quantized_bytes(numel: int, reduction: int, dtype_bytes: int, options: QuantizeOptions, rows_size: int = 0
                    ) -> int:
    """The bytes of one weight of `numel` elements reduced over an axis of `reduction` elements, stored as
    `options` stores it: the packed codes, a scale (and zero point) per group, nvfp4's per-tensor scale."""
    fmt = FORMATS.get(options.weights)
    if fmt is None:
        return numel * dtype_bytes
    group = options.group_size or fmt.group or reduction
    rows = options.block_rows or 1
    if reduction % group or (rows_size and rows_size % rows):
        return numel * dtype_bytes  # the pass refuses it where it is contracted
    codes = fmt.unsigned_codes if options.zero_point and fmt.unsigned_codes else fmt.codes
    groups = numel // group // rows
    total = codes.bytes_of(numel) + fmt.scale.bytes_of(groups)
    if options.zero_point:
        total += codes.bytes_of(groups)
    return total + (4 if fmt.tensor_scale else 0)


def quantized_weight_bytes(model: Any, options: QuantizeOptions, dtype_bytes: int) -> int:
    """A model's weight bytes with its projections quantized: every parameter of two or more axes but the
    embeddings' and the excluded ones, grouped along its last axis (torch's `Linear` keeps the input
    features last; the experts' stacked weights are taken the same way)."""
    import torch

    embeddings = {id(m.weight) for m in model.modules() if isinstance(m, torch.nn.Embedding)}
    total = 0
    for name, p in model.named_parameters():
        flat = name.replace(".", "_")
        if p.dim() < 2 or id(p) in embeddings or excluded(flat, options.exclude):
            total += p.numel() * p.element_size()
        else:
            total += quantized_bytes(p.numel(), p.shape[-1], dtype_bytes, options, p.shape[-2])
    return total


def quantized_kv_bytes_per_token(kv_bytes_per_token: int, head_dim: int, dtype_bytes: int,
                                 options: QuantizeOptions) -> int:
    """One token's keys and values over every layer in the quantized cache: fp8 codes (its per-tensor
    scales do not grow with the tokens), or int8/int4 codes with an f16 scale per head."""
    if options.kv_cache == "none":
        return kv_bytes_per_token
    elements = kv_bytes_per_token // dtype_bytes
    codes = CACHE_CODES[options.kv_cache]
    scales = 0 if options.kv_cache == "fp8" else elements // head_dim * 2
    return codes.bytes_of(elements) + scales
