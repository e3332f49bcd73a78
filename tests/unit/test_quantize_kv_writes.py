"""The KV cache's every write packed by --quantize (passes/quantize_kv.py): a prefill's returned keys and values
and a static cache's in-place stores, at full width on the meta device (a 2-layer twin of Llama-3-8B), whole-
graph bytes exact against the closed form."""

from __future__ import annotations

import copy
import os

import pytest

pytest.importorskip("transformers")

from solar.backends.cost import CostModel
from solar.bench.llm_serving import lifted
from solar.frontends.llm_models import export_phase, load_config
from solar.passes.quantize import QuantizeOptions

CONFIG = os.path.join(os.path.dirname(__file__), "data", "hf_configs", "llama-3-8b.json")
H, KV_HEADS, HEAD_DIM, VOCAB, INTERMEDIATE, LAYERS = 4096, 8, 128, 128256, 14336, 2
BATCH, PROMPT, CONTEXT = 3, 10, 20
# What every step reads and writes besides the cache: the 2 layers' bf16 weights and norms, lm_head, the final
# norm, one embedding row (the least a gather of ids reads), the rotary frequencies, the last logits.
LAYER = (H * (2 * H + 2 * KV_HEADS * HEAD_DIM) + 3 * H * INTERMEDIATE + 2 * H) * 2
REST = LAYERS * LAYER + VOCAB * H * 2 + H * 2 + H * 2 + HEAD_DIM // 2 * 4 + BATCH * VOCAB * 2
TENSORS = 2 * LAYERS  # the keys and the values of each layer
ELEMENTS_PER_TOKEN = TENSORS * KV_HEADS * HEAD_DIM


def stored(tokens: int, fmt: str) -> int:
    """`tokens` tokens of every layer's keys and values as the cache stores them: bf16; fp8 codes (their f32
    scale per tensor is counted apart); int8/int4 codes and an f16 scale per token, head and tensor."""
    if fmt == "none":
        return tokens * ELEMENTS_PER_TOKEN * 2
    codes = tokens * ELEMENTS_PER_TOKEN // (2 if fmt == "int4" else 1)
    return codes + (0 if fmt == "fp8" else tokens * TENSORS * KV_HEADS * 2)


def _bytes(cache: str, phase: str, fmt: str) -> int:
    cfg = load_config(CONFIG, None, cache)
    exported = export_phase(cfg, phase, 2, 16, LAYERS)
    module, _ = lifted(copy.deepcopy(exported.module), QuantizeOptions(kv_cache=fmt) if fmt != "none" else None)
    sizes = exported.sizes
    values = {sizes["batch"]: BATCH}
    if phase == "prefill":
        values[sizes["prompt"]] = PROMPT
    else:
        values |= {sizes["context"]: CONTEXT, sizes["cache_slots"]: CONTEXT + 1}
    return CostModel(module, values=values).whole_graph().total_bytes


FORMATS = ("none", "fp8", "int4")  # int8 takes int4's path with 1-byte codes


@pytest.mark.parametrize("cache", ["dynamic", "static"])
def test_a_prefill_writes_its_keys_and_values_packed(cache: str):
    for fmt in FORMATS:
        scales = TENSORS * 4 if fmt == "fp8" else 0
        assert _bytes(cache, "prefill", fmt) == REST + BATCH * PROMPT * 8 + stored(BATCH * PROMPT, fmt) \
            + scales, fmt


def test_a_static_cache_is_read_and_stored_packed():
    """The decode step reads the cache's P tokens (the store fills slot P) and writes the new token's keys and
    values in place: both packed, with their scales."""
    for fmt in FORMATS:
        scales = TENSORS * 4 if fmt == "fp8" else 0
        assert _bytes("static", "decode", fmt) == REST + BATCH * 8 + stored(BATCH * CONTEXT, fmt) \
            + stored(BATCH, fmt) + scales, fmt
