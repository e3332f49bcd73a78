"""The memory a quantized model holds: its weights packed with their scales, its cache per token
(frontends/llm_quantization.py gives the bytes of each format)."""

from __future__ import annotations

import dataclasses

from solar.frontends.llm_models import LlmConfig, build_model
from solar.frontends.llm_quantization import quantized_kv_bytes_per_token, quantized_weight_bytes
from solar.passes.quantize import QuantizeOptions

from .llm_serving import Memory


def quantized_memory(cfg: LlmConfig, memory: Memory, options: QuantizeOptions) -> Memory:
    """`memory` with the weights and the cache as `options` stores them (a KernelBench-style file's own
    module, or a config's meta model, measured parameter by parameter)."""
    s = cfg.shape
    model = cfg.source.build(s.dtype) if cfg.source is not None else build_model(cfg.config, s.dtype, cfg.path)
    layers = getattr(getattr(model, "model", model), "layers", None)
    weights = quantized_weight_bytes(model, options, s.dtype_bytes)
    layer = quantized_weight_bytes(layers[0], options, s.dtype_bytes) if layers is not None and len(layers) \
        else memory.layer_weight_bytes
    experts = memory.expert_bytes
    if experts and layers is not None and len(layers):
        routed = [m for name, m in layers[0].named_modules() if name.endswith("experts")]
        experts = quantized_weight_bytes(routed[0], options, s.dtype_bytes) // s.experts if routed else experts
    kv = quantized_kv_bytes_per_token(memory.kv_bytes_per_token, s.head_dim, s.dtype_bytes, options)
    return dataclasses.replace(memory, weight_bytes=weights, layer_weight_bytes=layer, kv_bytes_per_token=kv,
                               expert_bytes=experts)
