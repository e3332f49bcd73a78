"""solar-llm with HF's StaticCache (`--cache static`): the update is an in-place store of the new token's
keys and values (`solar.scatter {in_place = true}`), the mask keeps the attention to the live context, and
the figures equal DynamicCache's (docs/llm.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from solar.backends.sweep import CostSurface
from solar.bench.llm_report import LlmRequest, analyse_llm
from solar.bench.llm_serving import lifted, model_memory, price_phase
from solar.frontends.llm_models import LlmError, export_phase, load_config
from solar.ir.analysis.isl_model import isl_name
from solar.ir.ops import ScatterOp
from solar.ir.printer import print_module
from solar.targets.loader import load_target
from solar.tools.solar_llm import run

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
H100 = load_target("h100")
MHA = {"model_type": "llama", "vocab_size": 128, "hidden_size": 32, "intermediate_size": 64,
       "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4, "torch_dtype": "bfloat16"}


@pytest.fixture(scope="module")
def mha(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("cfg") / "config.json"
    path.write_text(json.dumps(MHA))
    return str(path)


def _figures(path: str, cache: str, phase: str, batch: int, length: int,
             slots: int | None = None) -> dict[str, tuple[int, int, int]]:
    """(MACs, FLOPs, bytes) per mode at one point, the step exported at batch 2, length 9; a static cache
    has `slots` slots (P + 1 when None)."""
    exported = export_phase(load_config(path, cache=cache), phase, 2, 9, 2)
    module, remarks = lifted(exported.module)
    assert remarks == []
    surface = CostSurface(module, [H100])
    key = "prompt" if phase == "prefill" else "context"
    values = {exported.sizes["batch"]: batch, exported.sizes[key]: length}
    if phase == "decode" and "cache_slots" in exported.sizes:  # as solar-llm prices it: P + 1 slots
        values[exported.sizes["cache_slots"]] = length + 1 if slots is None else slots
    point = surface.point(values)
    tensor = surface.formulas("unfused")["flops_tensor"]
    macs = int(tensor.evaluate({isl_name(k): v for k, v in point.items()})) // 2
    return {c.mode: (macs, c.flops, c.bytes) for c in surface.at(point)}


def test_static_decode_updates_in_place_and_equals_dynamic(mha):
    cfg = load_config(mha, cache="static")
    exported = export_phase(cfg, "decode", 2, 9, 2)
    assert set(exported.sizes) == {"batch", "context", "cache_slots"}
    stores = [op for op in exported.module.entry.walk() if isinstance(op, ScatterOp)]
    assert len(stores) == 4 and all(op.attrs.get("in_place") is True for op in stores)  # K and V, 2 layers
    # The cache has 10 slots; at context 5 the mask leaves 6 keys per query and the tail of 4 unread.
    static, dynamic = _figures(mha, "static", "decode", 3, 5), _figures(mha, "dynamic", "decode", 3, 5)
    s = cfg.shape
    attention = 2 * s.layers * 3 * s.heads * (5 + 1) * s.head_dim
    assert static["whole_graph"][0] == dynamic["whole_graph"][0]
    linear = s.layers * (4 * s.hidden ** 2 + 3 * s.hidden * MHA["intermediate_size"]) + s.vocab * s.hidden
    assert dynamic["whole_graph"][0] - attention == 3 * linear
    # Bytes: the cache read once (P tokens) and the new token written, as with DynamicCache's append.
    assert static["whole_graph"][2] == dynamic["whole_graph"][2]
    # FLOPs: StaticCache also bumps its token counter (`cumulative_length.add_(1)`) once per layer.
    assert static["whole_graph"][1] - dynamic["whole_graph"][1] == s.layers


def test_static_gqa_decode_lifts_and_equals_dynamic():
    # 4 query heads over 2 key-value heads: the static attention (mask `kv <= P`) lifts to einsums whose
    # where-clause names the context, and the keys are read once per key-value head, as with DynamicCache.
    path = str(CONFIGS / "tiny-llama.json")
    static, dynamic = _figures(path, "static", "decode", 3, 5), _figures(path, "dynamic", "decode", 3, 5)
    assert static["whole_graph"][0] == dynamic["whole_graph"][0]
    assert static["whole_graph"][2] == dynamic["whole_graph"][2]
    assert static["whole_graph"][1] - dynamic["whole_graph"][1] == 2  # the token counter of each exported layer


def test_static_gqa_decode_with_spare_slots_reads_the_live_keys_once():
    # 10 slots at context 5: the keys of each key-value head are broadcast to its 2 query heads, which
    # read slots 0..5; divided by the broadcast's 2 copies that is the 6 live slots once per key-value
    # head, DynamicCache's 48,552 B (the view's footprint capped by the whole cache gave 50,216 B), with
    # one embedding row for the 3 tokens (their ids may be the same).
    path = str(CONFIGS / "tiny-llama.json")
    spare = _figures(path, "static", "decode", 3, 5, slots=10)
    assert spare["whole_graph"][2] == spare["fused"][2] == 48_552
    assert spare["whole_graph"][2] == _figures(path, "dynamic", "decode", 3, 5)["whole_graph"][2]


def test_llama3_8b_static_decode_at_full_size():
    """GQA (32 query heads over 8) with StaticCache at full size on meta: decode MACs are DynamicCache's
    (P + 1 keys) and the bytes the closed form of tests/unit/test_llm.py, at a sweep's points too."""
    cfg = load_config(str(CONFIGS / "llama-3-8b.json"), cache="static")
    s = cfg.shape
    step = price_phase(cfg, "decode", [H100], 4, 64)
    assert step.remarks == []
    memory = model_memory(cfg)
    embed = s.vocab * s.hidden * s.dtype_bytes
    norms = (2 * s.layers + 1) * s.hidden * s.dtype_bytes
    linear_params = (memory.weight_bytes - embed - norms) // s.dtype_bytes
    points = [(3, 100), (1, 4000)]  # contexts past the export's 64: the slots follow the context

    def expected(batch: int, context: int) -> tuple[int, int]:
        attention = 2 * s.layers * batch * s.heads * (context + 1) * s.head_dim
        inv_freq = (s.head_dim // 2) * 4  # the rotary frequencies, f32
        nbytes = (memory.weight_bytes - embed + s.hidden * s.dtype_bytes + batch * 8 + inv_freq
                  + batch * context * s.kv_bytes_per_token  # the cache, read once
                  + batch * s.kv_bytes_per_token  # the new token's keys and values, stored in place
                  + batch * s.vocab * s.dtype_bytes)  # the last position's logits
        return batch * linear_params + attention, nbytes

    one_by_one = {(b, p, m): step.cost(b, p, "h100-sxm", m) for b, p in points for m in ("fused", "whole_graph")}
    for (b, p, _mode), cost in one_by_one.items():
        assert (cost.macs, cost.bytes) == expected(b, p)
    step._table.clear()
    step.prefetch([1, 3], [100, 4000])  # the sweep's grid path
    assert {k: step.cost(*k[:2], "h100-sxm", k[2]) for k in one_by_one} == one_by_one


def test_zero_filled_static_cache_prefill(mha):
    # A fresh StaticCache is zeros (HF allocates it on the first update): stored into in place.
    exported = export_phase(load_config(mha, cache="static"), "prefill", 2, 9, 2)
    assert exported.appends == 4
    static, dynamic = _figures(mha, "static", "prefill", 3, 5), _figures(mha, "dynamic", "prefill", 3, 5)
    assert static["whole_graph"][0] == dynamic["whole_graph"][0]  # causal: S(S+1)/2 pairs either way
    assert static["whole_graph"][2] == dynamic["whole_graph"][2]


def test_static_cache_through_solar_llm(tmp_path, mha):
    out = tmp_path / "static.json"
    assert run([mha, "--cache", "static", "--phase", "decode", "--batch", "1,4", "--context", "16",
                "--no-validate", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    decode = [p for p in doc["points"] if p["phase"] == "decode" and p["mode"] == "whole-graph"]
    dynamic = analyse_llm(LlmRequest(mha, [H100], phases=("decode",), batches=[1, 4], contexts=[16], validate=False))
    same = [p.as_record() for p in dynamic.points if p.phase == "decode" and p.mode == "whole_graph"]
    assert [(p["macs"], p["bytes"]) for p in decode] == [(p["macs"], p["bytes"]) for p in same]


def test_static_cache_bad_inputs(tmp_path, mha, capsys):
    with pytest.raises(LlmError, match="--cache rolling: expected dynamic or static"):
        load_config(mha, cache="rolling")
    # A sliding window is modelled (its ring: tests/unit/test_llm_static_sliding.py), no longer refused.
    assert load_config(str(CONFIGS / "tiny-mistral.json"), cache="static").cache == "static"
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    out = tmp_path / "keep.json"
    out.write_text("kept")
    for argv in ([str(bad), "--cache", "static"], [mha, "--cache", "static", "--context", "0"],
                 [mha, "--cache", "static", "--tensor-parallel", "3", "--json", str(out)]):
        assert run(argv) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err
    assert out.read_text() == "kept"


IN_PLACE = '''solar.module @m [P = 5] {
  solar.func @f(%cache: tensor<2x8x4xf32>, %new: tensor<2x1x4xf32>) -> tensor<2x4xf32> {
    %idx = solar.constant [5] : tensor<1xi64>
    %c = solar.scatter %cache, %idx, %new {axis = 1, reduce = none, in_place = true} : tensor<2x8x4xf32>
    %s = solar.kernel @sum(%c as C) -> (S: tensor<2x4xf32>) {
      affine.for %b = 0 to 2 { affine.for %j = 0 to 8 { affine.for %d = 0 to 4 {
        affine.if %j <= P { S[%b, %d] += C[%b, %j, %d] }
      } } }
    }
    solar.return %s
  }
}
'''


def test_in_place_scatter_reads_the_buffer_through_its_result():
    from solar.backends.cost import CostModel
    from solar.ir.parser import parse_module

    module = parse_module(IN_PLACE, "in_place.sir")
    assert "in_place = true" in print_module(module)  # the attribute round-trips
    # The reader needs slots 0..P (6 of 8) of the buffer; slot 5 is the stored token, which comes from
    # %new: the buffer is read for 5 slots (2·5·4·4 B), %new read once (32 B), the result written (32 B).
    assert CostModel(module).whole_graph().bytes == 2 * 5 * 4 * 4 + 32 + 32


def test_index_copy_and_symbolic_positions_validate():
    """`index_copy` (a static cache's store) and positions after a cache (`arange(P, P + 1)`, `tensor(P)`)
    run as torch does: the translation is validated against the model."""
    import torch

    from solar.frontends.torch_export import callable_problem, reference_runner, translate_problem
    from solar.frontends.validate import small_sizes, validate_sized

    def step(cache: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
        past = cache.shape[1] - 1  # the last slot is free
        where = torch.arange(past, past + 1) + torch.tensor(past) * 0
        return cache.index_copy(1, where, new) * 2.0

    problem = callable_problem(step, [torch.randn(2, 6, 3), torch.randn(2, 1, 3)], "store")
    tr = translate_problem(problem, dynamic="all")
    assert "solar.scatter" in print_module(tr.module)
    report = validate_sized(tr.module, lambda sz: reference_runner(problem, tr, 0, sz), small_sizes(tr.module))
    assert report.ok, report.summary()
