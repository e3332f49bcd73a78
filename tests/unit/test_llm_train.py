"""solar-llm --phase train: a causal-LM training step from a config on the meta device (nothing downloaded),
priced from 2- and 3-layer twins (bench/llm_train.py), against closed forms and against the whole model."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from solar.bench.llm_train import MEMORY_FIELDS, price_train
from solar.frontends.llm_models import LlmError, load_config
from solar.frontends.llm_train import check_trainable
from solar.llm_training import LlmTrainingRequest, llm_training, render_training, training_json
from solar.targets.loader import load_target

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
H100 = load_target("h100")


def _cfg(name: str, dtype: str = "float32"):
    return load_config(str(CONFIGS / name), dtype)


@functools.cache
def _llama2_7b(batch: int, prompt: int):
    # SGD keeps no state: the fastest optimizer to lower; forward and backward do not depend on it.
    return price_train(_cfg("llama-2-7b.json"), [H100], batch, prompt, "sgd")[H100.name]


def _llama2_closed_form(batch: int, prompt: int) -> tuple[int, int, int]:
    """(forward, backward, all) contraction FLOPs of Llama-2-7B's step, from its architecture alone.

    Per layer, q, k, v and o are d×d (32 key-value heads of 32), gate and up d×f, down f×d: P = 4d² + 3df
    weights, each a product over every one of the T = B·S tokens: 2·T·P forward; the backward computes the
    input and the weight gradient of every one (the embedding needs the first layer's input gradient),
    4·T·P. The lm_head (V×d, untied) likewise: 2·T·V·d and 4·T·V·d. The embedding is a gather forward and a
    scatter-add backward: no product. 6·(L·P + V·d)·T is 6·N·tokens with N the weights that multiply.
    Causal attention per layer, batch row and head over the S(S+1)/2 live pairs (j ≤ i), 2·hd FLOPs each:
    the forward's Q·Kᵀ and P·V (2 products); the fused backward's 5 (S recomputed, dP = dO·Vᵀ, dV = Pᵀ·dO,
    dQ = dS·K, dK = dSᵀ·Q), plus its row sums D = Σ dO·O over hd (S·hd multiply-adds per head)."""
    d, f, vocab, layers, heads, hd = 4096, 11008, 32000, 32, 32, 128
    tokens = batch * prompt
    weights = 4 * d * d + 3 * d * f
    pairs = prompt * (prompt + 1) // 2
    heads_run = layers * batch * heads
    forward = 2 * tokens * (layers * weights + vocab * d) + heads_run * 2 * (2 * hd * pairs)
    backward = 4 * tokens * (layers * weights + vocab * d) + heads_run * (5 * 2 * hd * pairs + 2 * prompt * hd)
    return forward, backward, forward + backward


def test_llama2_7b_train_flops_equal_the_closed_form():
    batch, prompt = 1, 2048
    cost = _llama2_7b(batch, prompt)
    forward, backward, total = _llama2_closed_form(batch, prompt)
    assert cost.phases["forward"].contraction_flops == forward == 28_162_637_430_784
    assert cost.phases["backward"].contraction_flops == backward == 56_875_835_981_824
    assert total == 85_038_473_412_608
    # 6·N·tokens counts every weight, the embedding's too (its backward is a scatter-add, not a product),
    # and no attention: the closed form is 6·N·tokens − 6·V·d·tokens (embedding) + the attention term.
    n = 6_738_415_616
    assert cost.info["trained_parameters"] == n
    attention = 32 * 32 * (7 * 2 * 128 * (2048 * 2049 // 2) + 2 * 2048 * 128)
    norms = 32 * 2 * 4096 + 4096  # RMSNorm weights: two per layer and the final one (no product)
    assert total == 6 * (n - 32000 * 4096 - norms) * 2048 + attention
    # The rest of the model FLOPs is vector work (norms, rotary, SiLU, softmax, the loss): well under 0.1 %.
    vector = cost.phases["forward"].flops + cost.phases["backward"].flops - total
    assert 0 < vector < total // 1000


def test_llama2_7b_train_memory_is_exact():
    cost = _llama2_7b(1, 2048)
    n = 6_738_415_616
    assert cost.info["parameter_bytes"] == cost.info["gradient_bytes"] == 4 * n
    assert cost.info["optimizer_state_bytes"] == 0  # SGD without momentum keeps none
    assert cost.info["tokens"] == 2048


def test_twins_scale_to_the_whole_model_exactly():
    # tiny-llama has 4 layers: priced from the 2- and 3-layer twins, and exported whole.
    cfg = _cfg("tiny-llama.json")
    scaled = price_train(cfg, [H100], 2, 16, "sgd")[H100.name]
    whole = price_train(cfg, [H100], 2, 16, "sgd", twins=False)[H100.name]
    for ph in ("forward", "backward", "optimizer"):
        a, b = scaled.phases[ph], whole.phases[ph]
        assert (a.kernels, a.flops, a.contraction_flops, a.bytes) == (b.kernels, b.flops, b.contraction_flops,
                                                                       b.bytes)
        assert a.seconds == pytest.approx(b.seconds, rel=1e-9)
    assert scaled.whole_bytes == whole.whole_bytes
    assert all(scaled.info[k] == whole.info[k] for k in MEMORY_FIELDS)
    for mode in ("unfused", "whole_graph"):
        assert scaled.steps[mode] == pytest.approx(whole.steps[mode], rel=1e-9)


def test_report_and_json(tmp_path):
    request = LlmTrainingRequest(str(CONFIGS / "tiny-llama.json"), [H100], [2], [16], "sgd", validate=True,
                                 data_parallel=4)
    result = llm_training(request)
    text = render_training(result)
    assert "batch 2 x prompt 16 (32 tokens) on h100-sxm" in text
    assert "MFU bound" in text and "6*N*tokens" in text and "data parallel x4" in text
    assert "validation: train (sgd, cross_entropy) validated at reduced sizes" in text and ": ok;" in text
    doc = training_json(result)
    point = doc["points"][0]
    assert point["tokens"] == 32 and set(point["phases"]) == {"forward", "backward", "optimizer"}
    # tiny-llama: embedding and lm_head 128×32, per layer q 32×32, k and v 16×32, o 32×32, gate and up
    # 64×32, down 32×64 and two norms of 32; the final norm.
    n = 2 * 128 * 32 + 4 * (2 * 32 * 32 + 2 * 16 * 32 + 3 * 64 * 32 + 2 * 32) + 32
    assert point["trained_parameters"] == n and point["memory"]["gradient"] == 4 * n


def test_refusals():
    with pytest.raises(LlmError, match="sliding window"):
        check_trainable(_cfg("tiny-mistral.json"), 1 << 20)
    with pytest.raises(LlmError, match="--optimizer lamb"):
        llm_training(LlmTrainingRequest(str(CONFIGS / "tiny-llama.json"), [H100], [1], [8], "lamb"))
