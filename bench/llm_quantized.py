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
    module, or a config's meta model, measured parameter by parameter). Each layer is measured on its own:
    a model whose first layers are dense (DeepSeek's `first_k_dense_replace`) stores them unlike its
    mixture-of-experts layers, so a deployment that splits layers by stage needs every layer's bytes."""
    s = cfg.shape
    model = cfg.source.build(s.dtype) if cfg.source is not None else build_model(cfg.config, s.dtype, cfg.path)
    layers = list(getattr(getattr(model, "model", model), "layers", None) or ())
    weights = quantized_weight_bytes(model, options, s.dtype_bytes)
    layer_bytes = tuple(quantized_weight_bytes(layer, options, s.dtype_bytes) for layer in layers)
    routed = [next((m for name, m in layer.named_modules() if name.rsplit(".", 1)[-1] == "experts"), None)
              for layer in layers]
    layer_expert_bytes = tuple(quantized_weight_bytes(r, options, s.dtype_bytes) if r is not None and s.experts
                               else 0 for r in routed)
    stored = dataclasses.replace(memory, weight_bytes=weights, activations=options.activations,
                                 kv_bytes_per_token=quantized_kv_bytes_per_token(
                                     memory.kv_bytes_per_token, s.head_dim, s.dtype_bytes, options))
    if not layers:
        return stored
    # One routed expert: a mixture-of-experts layer's experts (the first such layer; all alike) over their count.
    experts = next((e for e in layer_expert_bytes if e), 0) // s.experts if s.experts else memory.expert_bytes
    # The per-layer figures only where the model's own were per layer (a model given as code keeps its totals).
    per_layer = dict(layer_bytes=layer_bytes, layer_expert_bytes=layer_expert_bytes) if memory.layer_bytes else {}
    return dataclasses.replace(stored, layer_weight_bytes=layer_bytes[0], expert_bytes=experts, **per_layer)
