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


BATCH, PROMPT = 2, 1024  # batch and sequence apart, so that a term per token and one per position differ
FORWARD_PRODUCTS, BACKWARD_PRODUCTS = 27_612_881_616_896, 55_501_446_447_104


def _llama2_vector_closed_form(batch: int, prompt: int) -> tuple[int, int]:
    """(forward, backward) vector FLOPs of Llama-2-7B's step: one per output element of each elementwise
    op, one per element a reduction reads (a mean adds its divide per row), as docs/counts.md counts them.

    Per layer, over T = B·S tokens of width d (MLP width f):
    - forward: two RMSNorms (x², mean, + eps, rsqrt, x·r, w·(): 4·T·d + 3·T each); rotary on q and k
      (x·cos, rotate-half's negation of half, ·sin, +: 3.5·T·d each); two residual adds (2·T·d); SiLU (2 per
      element: a sigmoid and a product) and its product with up (3·T·f); the fused attention's softmax per
      live pair: scale and max, then scale, subtract, exp and sum, then scale, subtract, exp and divide (10),
      and per row its log-sum-exp (add, log: 2).
      17·T·d + 6·T + 3·T·f + B·h·(10·pairs + 2·S)
    - backward: SiLU·up's backward (8·T·f); gate and up input gradients added (T·d); two RMSNorm backwards
      (11·T·d + 3·T each, with the residual's gradient added); rotary's backward on q and k (4.5·T·d each);
      q, k and v input gradients added (2·T·d); the fused attention's backward per live pair: the logit
      (scale, subtract the log-sum-exp), exp, and dS = P·(dP − D)·scale (6).
      34·T·d + 6·T + 8·T·f + 6·B·h·pairs
    Once: positions (S), the rotary table (inv_freq × positions: S·hd/2; cos, sin and the attention scaling
    on each: 4·S·hd), the final RMSNorm (4·T·d + 3·T), the loss (log_softmax: 7 per logit; the target's
    mask, pick and mean: 7·T + 2); backward: the loss's (2 + 3·T, log_softmax's 4·T·V), the final norm's
    (10·T·d + 3·T) and the embedding's (the ids' range checks and clamp, 5·T; the gradient masked: T·d)."""
    d, f, vocab, layers, heads, hd = 4096, 11008, 32000, 32, 32, 128
    t, pairs = batch * prompt, prompt * (prompt + 1) // 2
    forward_layer = 17 * t * d + 6 * t + 3 * t * f + batch * heads * (10 * pairs + 2 * prompt)
    backward_layer = 34 * t * d + 6 * t + 8 * t * f + 6 * batch * heads * pairs
    forward_once = prompt + prompt * hd // 2 + 4 * prompt * hd + 4 * t * d + 3 * t + 7 * t * vocab + 7 * t + 2
    backward_once = 2 + 3 * t + 4 * t * vocab + 10 * t * d + 3 * t + 5 * t + t * d
    return layers * forward_layer + forward_once, layers * backward_layer + backward_once


def test_llama2_7b_train_flops_equal_the_closed_form():
    cost = _llama2_7b(BATCH, PROMPT)
    forward, backward, total = _llama2_closed_form(BATCH, PROMPT)
    assert cost.phases["forward"].contraction_flops == forward == FORWARD_PRODUCTS
    assert cost.phases["backward"].contraction_flops == backward == BACKWARD_PRODUCTS
    # 6·N·tokens counts every weight, the embedding's and the norms' too (a gather and a scatter-add, and
    # elementwise products: no contraction), and no attention.
    n = 6_738_415_616
    assert cost.info["trained_parameters"] == n
    pairs = PROMPT * (PROMPT + 1) // 2
    attention = 32 * BATCH * 32 * (7 * 2 * 128 * pairs + 2 * PROMPT * 128)
    norms = 32 * 2 * 4096 + 4096  # RMSNorm weights: two per layer and the final one
    assert total == 6 * (n - 32000 * 4096 - norms) * BATCH * PROMPT + attention
    # Every other FLOP of the step is vector work, also exact.
    vector_forward, vector_backward = _llama2_vector_closed_form(BATCH, PROMPT)
    assert cost.phases["forward"].flops == forward + vector_forward
    assert cost.phases["backward"].flops == backward + vector_backward


def test_llama2_7b_train_memory_is_exact():
    cost = _llama2_7b(BATCH, PROMPT)
    n = 6_738_415_616
    assert cost.info["parameter_bytes"] == cost.info["gradient_bytes"] == 4 * n
    assert cost.info["optimizer_state_bytes"] == 0  # SGD without momentum keeps none
    assert cost.info["tokens"] == BATCH * PROMPT


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
    # The eager experts loop over the experts the routing hit (data-dependent): a step that does not
    # export is one line naming the config.
    with pytest.raises(LlmError, match=r"tiny-mixtral.json: the training step did not translate: data-dependent"):
        price_train(_cfg("tiny-mixtral.json"), [H100], 2, 8, "sgd")
    with pytest.raises(LlmError, match="--optimizer lamb"):
        llm_training(LlmTrainingRequest(str(CONFIGS / "tiny-llama.json"), [H100], [1], [8], "lamb"))


def test_llama2_7b_tensor_parallel_equals_the_closed_form():
    """--tensor-parallel 2 --data-parallel 4 (bench/llm_train_parallel.py) from Llama-2-7B's step: per chip half
    of the parameters, gradients and saved activations; four TP all-reduces a layer of the tokens' hidden
    states (f32), half of each over NVLink; the ring all-reduce of each chip's gradients over the 4 replicas,
    within one 8-chip domain (ranks 2 apart)."""
    from solar.bench.llm_train_parallel import train_split
    from solar.training import PhaseCost, build_report

    cost = _llama2_7b(BATCH, PROMPT)
    phases = {ph: PhaseCost(ph, c.kernels, c.flops, c.bytes, c.seconds) for ph, c in cost.phases.items()}
    report = build_report(H100.name, phases, cost.steps, cost.whole_bytes, cost.info)
    split = train_split(_cfg("llama-2-7b.json"), report, H100, BATCH * PROMPT, 2, 4)
    n, d, layers, tokens = 6_738_415_616, 4096, 32, BATCH * PROMPT
    assert split.memory["parameter"] == split.memory["gradient"] == 4 * n // 2
    assert split.memory["saved_activation"] == -(-cost.info["saved_activation_bytes"] // 2)
    assert split.tp_allreduce_bytes == 2 * 2 * layers * (1 / 2) * tokens * d * 4
    nvlink = H100.require("nvlink_bandwidth") / 2  # each way
    assert split.tp_allreduce_s == pytest.approx(split.tp_allreduce_bytes / nvlink)
    assert split.dp_allreduce_bytes == 2 * 3 / 4 * (4 * n / 2)
    assert split.dp_allreduce_s == pytest.approx(split.dp_allreduce_bytes / nvlink)
    for mode, seconds in cost.steps.items():
        assert split.step_seconds[mode] == max(seconds / 2, split.tp_allreduce_s + split.dp_allreduce_s)
    # Across domains: 8 replicas 2 chips apart span two 8-chip domains; 1/4 of each chip's gradients crosses.
    wide = train_split(_cfg("llama-2-7b.json"), report, H100, BATCH * PROMPT, 2, 8)
    intra, inter = 2 * 3 / 4 * (4 * n / 2), 2 * 1 / 2 * (4 * n / 2) / 4
    assert wide.dp_allreduce_bytes == intra + inter
    assert wide.dp_allreduce_s == pytest.approx(max(intra / nvlink, inter / (H100.require("internode_bandwidth") / 2)))


def test_tensor_parallel_report_and_json():
    request = LlmTrainingRequest(str(CONFIGS / "tiny-llama.json"), [H100], [2], [16], "sgd", validate=False,
                                 data_parallel=4, tensor_parallel=2)
    result = llm_training(request)
    text = render_training(result)
    assert "tensor parallel x2, data parallel x4 (8 chips): per chip parameters" in text
    split = training_json(result)["points"][0]["split"]
    # tiny-llama: 4 layers of hidden 32, 2 x 16 tokens in f32: 4 all-reduces a layer, half of each sent.
    assert split["tp_allreduce_bytes"] == 4 * 4 * (1 / 2) * 32 * 32 * 4
    assert split["chips"] == 8 and split["memory_per_chip"]["gradient"] == training_json(result)["points"][0][
        "memory"]["gradient"] // 2
