"""solar-llm --cache static on sliding-window configs: each sliding layer's StaticCache is a ring of W slots.
Below W tokens it fills like a full layer's cache (`index_copy_` at P); from W on, HF rolls the window
and stores the new token in the last slot, which the lowering reads as the append it is
(frontends/torch_ring.py): the last W − 1 tokens read once, one written, the rolled copy never priced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from solar.backends.cost import CostModel
from solar.bench.llm_serving import model_memory, price_phase, serving_point
from solar.frontends.llm_models import LlmError, export_phase, load_config, sliding_layers
from solar.frontends.llm_validate import validate_step
from solar.ir.ops import ConcatOp, ScatterOp
from solar.ir.parser import parse_module
from solar.targets.loader import load_target
from solar.tools.solar_llm import run

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
MISTRAL = str(CONFIGS / "tiny-mistral.json")  # window 16, 4 query heads over 2 key-value heads, 2 layers
H100 = load_target("h100")
CONTEXTS = [5, 14, 15, 16, 40]  # below the window, its last free slot (P = W − 1), full, past it
# A Qwen2-style config whose layers differ: layer 0 full attention, layer 1 a sliding window of 16.
MIXED = {"model_type": "qwen2", "vocab_size": 128, "hidden_size": 32, "intermediate_size": 64,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 256,
         "use_sliding_window": True, "sliding_window": 16, "max_window_layers": 1,
         "layer_types": ["full_attention", "sliding_attention"], "torch_dtype": "float32"}


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("cfg") / "config.json"
    path.write_text(json.dumps(MIXED))
    return str(path)


def _costs(path: str, cache: str, phase: str, lengths: list[int], batch: int = 3) -> dict[int, tuple[int, int, int]]:
    """(MACs, FLOPs, bytes) of the whole graph at each length, as solar-llm prices a sweep of them."""
    step = price_phase(load_config(path, cache=cache), phase, [H100], 2, max(lengths), lengths=lengths)
    assert step.remarks == []
    return {n: (c.macs, c.flops, c.bytes) for n in lengths
            for c in [step.cost(batch, n, "h100-sxm", "whole_graph")]}


def _linear_macs(cfg_path: str) -> int:
    s = load_config(cfg_path).shape
    q, kv = s.heads * s.head_dim, s.kv_heads * s.head_dim
    return s.layers * (2 * s.hidden * q + 2 * s.hidden * kv + 3 * s.hidden * 64) + s.vocab * s.hidden


def test_ring_is_an_append_past_the_window_and_a_store_below_it():
    cfg = load_config(MISTRAL, cache="static")
    assert sliding_layers(cfg.config) == [True, True]
    full = export_phase(cfg, "decode", 2, 40, 2)  # the exports `_costs` prices CONTEXTS with
    ops = list(full.module.entry.walk())
    appends = [op for op in ops if isinstance(op, ConcatOp) and op.attrs.get("append") is True]
    assert len(appends) == 4 and full.appends == 4  # K and V of 2 layers: cat(ring[1:W], new), in place
    assert not any(op.opname in ("solar.scatter", "solar.roll") for op in ops)  # no store, no rolled copy
    assert full.minimums["context"] == 16 and full.maximums == {}  # the export holds for P ≥ W
    filling = export_phase(cfg, "decode", 2, 15, 2)
    stores = [op for op in filling.module.entry.walk() if isinstance(op, ScatterOp)]
    assert len(stores) == 4 and all(op.attrs.get("in_place") is True for op in stores)
    assert filling.maximums == {"context": 15}  # P < W: the ring has a free slot at P


def test_sliding_decode_is_the_closed_form_and_equals_dynamic():
    s = load_config(MISTRAL).shape
    static = _costs(MISTRAL, "static", "decode", CONTEXTS)
    # DynamicCache's decode specialises the context at P = W − 2 and W − 1 (where its window's branch and
    # slice meet): those two get an export each (tests/unit/test_llm_dynamic_sliding.py).
    dynamic = _costs(MISTRAL, "dynamic", "decode", CONTEXTS)
    batch, token = 3, s.kv_bytes_per_token
    for context in CONTEXTS:
        keys = min(context + 1, s.sliding_window)  # the live window: P cached + the new one, at most W
        attention = 2 * s.layers * batch * s.heads * keys * s.head_dim
        assert static[context][0] == dynamic[context][0] == batch * _linear_macs(MISTRAL) + attention
        # Bytes: the same as DynamicCache's (which keeps W − 1 tokens and appends one) at every context.
        assert static[context][2] == dynamic[context][2]
        # FLOPs: below W, StaticCache adds its token counter to the write position and bumps it, once per
        # layer each; past W, neither runs (the ring's shift has no counter).
        assert static[context][1] - dynamic[context][1] == (2 * s.layers if context < s.sliding_window else 0)
    # The live window's reads: each cached token read once until the window is full, then W − 1 always.
    assert static[14][2] - static[5][2] == 9 * batch * token
    assert static[15][2] - static[14][2] == batch * token
    assert static[16][2] == static[15][2] == static[40][2]


def test_mixed_layer_types_decode(mixed):
    # Layer 0 attends all P + 1 keys from P + 1 slots; layer 1's ring attends min(P + 1, W).
    cfg = load_config(mixed, cache="static")
    assert sliding_layers(cfg.config) == [False, True]
    s = cfg.shape
    static = _costs(mixed, "static", "decode", CONTEXTS)
    batch, per_layer_token = 3, s.kv_bytes_per_token // s.layers
    for context in CONTEXTS:
        keys = (context + 1) + min(context + 1, s.sliding_window)
        assert static[context][0] == batch * _linear_macs(mixed) + 2 * batch * s.heads * keys * s.head_dim
    # Below W both layers read each cached token; past W only the full layer's reads grow, one token of
    # one layer per sequence.
    assert static[40][2] - static[16][2] == 24 * batch * per_layer_token
    assert static[14][2] - static[5][2] == 9 * batch * 2 * per_layer_token


def test_sliding_prefill_keeps_the_last_w_tokens():
    # MACs are the live pairs either way. A prompt longer than the window leaves W tokens in a static ring
    # (HF copies the last W into it), one more per sliding layer than DynamicCache's W − 1: the bytes differ
    # by exactly that token's keys and values.
    s = load_config(MISTRAL).shape
    prompts = [8, 16, 17, 32]
    static, dynamic = _costs(MISTRAL, "static", "prefill", prompts), _costs(MISTRAL, "dynamic", "prefill", prompts)
    for prompt in prompts:
        assert static[prompt][0] == dynamic[prompt][0]
        extra = 3 * s.kv_bytes_per_token if prompt >= s.sliding_window else 0
        assert static[prompt][2] - dynamic[prompt][2] == extra


def test_mistral_7b_static_ring_at_full_size():
    """Mistral-7B (window 4096, 32 query heads over 8) with StaticCache on meta: past the window a decode step
    reads the ring's W − 1 cached tokens and writes one, as with DynamicCache (tests/unit/test_llm.py); the
    ring holds W tokens; below the window the step reads P."""
    cfg = load_config(str(CONFIGS / "mistral-7b.json"), cache="static")
    s = cfg.shape
    window = s.sliding_window
    memory = model_memory(cfg)
    embed = s.vocab * s.hidden * s.dtype_bytes
    norms = (2 * s.layers + 1) * s.hidden * s.dtype_bytes
    linear_params = (memory.weight_bytes - embed - norms) // s.dtype_bytes
    decode = price_phase(cfg, "decode", [H100], 2, 8192, lengths=[100, 5000, 8192])
    kv_token = s.kv_bytes_per_token
    for batch, context in ((1, 8192), (3, 5000), (2, 100)):
        cost = decode.cost(batch, context, "h100-sxm", "whole_graph")
        keys = min(context + 1, window)
        assert cost.macs == batch * linear_params + 2 * s.layers * batch * s.heads * keys * s.head_dim
        assert cost.bytes == (memory.weight_bytes - embed + s.hidden * s.dtype_bytes + batch * 8
                              + (s.head_dim // 2) * 4  # one embedding row (ids may repeat), ids, rotary freqs
                              + batch * (keys - 1) * kv_token  # the live window's cached tokens, read once
                              + batch * kv_token + batch * s.vocab * s.dtype_bytes)  # the new token, logits
        point = serving_point(decode, cfg, memory, H100, "whole_graph", batch, context)
        assert point.kv_cache_bytes == batch * min(context + 1, window) * kv_token  # what the ring holds


def test_static_sliding_through_solar_llm(tmp_path):
    out = tmp_path / "static.json"
    assert run([MISTRAL, "--cache", "static", "--phase", "decode", "--batch", "1,4", "--context", "8,32",
                "--json", str(out)]) == 0
    static = json.loads(out.read_text())["points"]
    assert run([MISTRAL, "--phase", "decode", "--batch", "1,4", "--context", "8,32", "--json", str(out)]) == 0
    dynamic = json.loads(out.read_text())["points"]
    token = load_config(MISTRAL).shape.kv_bytes_per_token
    unfused: dict[tuple[str, int], set[int]] = {}
    for a, b in zip(static, dynamic, strict=True):
        assert (a["phase"], a["batch"], a["mode"]) == (b["phase"], b["batch"], b["mode"])
        assert a["macs"] == b["macs"]
        # What the cache holds after the step: the ring min(P + 1, W) tokens, DynamicCache min(P + 1, W − 1).
        assert a["kv_cache_bytes"] - b["kv_cache_bytes"] == (a["batch"] * token if a["context"] == 32 else 0)
        if a["mode"] != "unfused":
            assert a["bytes"] == b["bytes"]
        else:
            # Unfused prices each kernel the model's code runs: StaticCache's token counter and write
            # position are a few scalar kernels of their own, the same bytes at every batch.
            unfused.setdefault(a["context"], set()).add(a["bytes"] - b["bytes"])
    assert unfused == {8: {112}, 32: {-16}}


def test_lengths_past_an_export_that_holds_below_the_window():
    step = price_phase(load_config(MISTRAL, cache="static"), "decode", [H100], 2, 15)
    assert step.most_length == 15
    with pytest.raises(LlmError, match=r"context 16: the decode step was exported for context ≤ 15"):
        step.cost(1, 16, "h100-sxm", "whole_graph")


BROADCAST = '''solar.module @m [P = 5] {
  solar.func @f(%k: tensor<2x16x4xf32>) -> tensor<2x2x4xf32> {
    %v = solar.reshape %k : tensor<2x1x16x4xf32>
    %b = solar.broadcast %v {dims = [0, 1, 2, 3]} : tensor<2x2x16x4xf32>
    %s = solar.kernel @sum(%b as B) -> (S: tensor<2x2x4xf32>) {
      affine.for %i = 0 to 2 { affine.for %g = 0 to 2 { affine.for %j = 0 to 16 { affine.for %d = 0 to 4 {
        affine.if %j <= P { S[%i, %g, %d] += B[%i, %g, %j, %d] }
      } } } }
    }
    solar.return %s
  }
}
'''


def test_partial_read_through_a_broadcast_reads_each_source_element_once():
    # Grouped-query attention's keys repeated for 2 query heads, read for slots 0..P of 16: the source is
    # read for P + 1 = 6 slots (2·6·4·4 B), not once per copy (which the cap at its size hid only when the
    # read covered the whole buffer), and the result written (64 B).
    assert CostModel(parse_module(BROADCAST, "broadcast.sir")).whole_graph().bytes == 2 * 6 * 4 * 4 + 64


def test_static_sliding_step_validates_rolling_its_ring(mixed):
    # The reduced twin's window is lowered below the context run (8), so the validated step rolls the ring:
    # HF's roll, store and copy against the append the translation made of them.
    for path in (MISTRAL, mixed):
        result = validate_step(load_config(path, cache="static"), "decode")
        assert result.report.ok, result.line()
        assert result.reduced["sliding_window"] == (16, 4)


def test_a_ring_shift_in_any_program_lowers_as_the_append_it_computes():
    """HF's pattern outside HF: roll by −1, store at `tensor([-1])`, copy back. The translation is one
    concat of the last 5 slots and the new one, and runs as torch does; a shift by 2 is not the pattern."""
    import torch

    from solar.frontends.torch_export import callable_problem, reference_runner, translate_problem
    from solar.frontends.validate import small_sizes, validate_sized
    from solar.ir.printer import print_module

    def ring(shift: int):
        def step(cache: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
            cache = cache.clone()
            rolled = cache.roll(-shift, dims=-2)
            rolled[:, :, torch.tensor([-1])] = new
            cache.copy_(rolled)
            return cache * 2.0
        return step

    inputs = [torch.randn(2, 3, 6, 4), torch.randn(2, 3, 1, 4)]
    problem = callable_problem(ring(1), inputs, "ring")
    tr = translate_problem(problem, dynamic="batch")
    text = print_module(tr.module)
    assert text.count("solar.concat") == 1 and "solar.scatter" not in text and not tr.decomposed
    report = validate_sized(tr.module, lambda sz: reference_runner(problem, tr, 0, sz), small_sizes(tr.module))
    assert report.ok, report.summary()
    # Not the pattern: a shift by 2 is left as it is written (the roll a view, the store at -1 a scatter
    # at the last slot, counted from the end as torch does), never an append, and runs as torch does.
    problem = callable_problem(ring(2), inputs, "ring2")
    tr = translate_problem(problem, dynamic="batch")
    text = print_module(tr.module)
    assert "solar.concat" not in text and "solar.roll" in text and "solar.scatter" in text
    report = validate_sized(tr.module, lambda sz: reference_runner(problem, tr, 0, sz), small_sizes(tr.module))
    assert report.ok, report.summary()
