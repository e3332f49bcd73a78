"""Real model families, each built from a configuration alone (no weights downloaded): a Llama-style decoder
with grouped-query attention and rotary embeddings, BERT, ViT, a mixture-of-experts block with top-k routing,
a UNet-like convolutional network, a Flax transformer, and the zoo (ZOO: T5 to wav2vec2). Each translates,
round-trips, validates against the original, and its tensor FLOPs match the formula its file spells out (the
zoo's: FlopCounterMode's less the padding taps). Small configurations here; the
full-size ones are analysed by `benchmarks/coverage.py --full`."""

from __future__ import annotations

import os
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("jax")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "frontend_corpus"))

import harness

sys.path.insert(0, harness.MODELS)  # the Hugging Face files share tests/model_corpus/_hf.py

from solar.frontends.jax_export import jax_reference, translate_jax
from solar.frontends.torch_export import load_problem, reference_runner, translate_problem
from solar.frontends.validate import small_sizes, validate, validate_sized
from solar.ir import parse_and_verify, print_module

# The zoo of issues 28 and 36: Hugging Face architectures whose tensor FLOPs are FlopCounterMode's less the padding
# taps (EXPECT "reference", harness.reference_macs).
ZOO = ["t5.py", "whisper_encoder.py", "gpt_neox.py", "mistral_sliding.py", "qwen2_moe.py", "deberta_v2.py",
       "clip_vision.py", "resnet.py", "mamba.py", "swin.py", "convnext.py", "wav2vec2.py",
       "phi3_rotary.py", "bloom.py"]
NEEDS = {"flax_transformer.py": "flax", "llama_gqa.py": "transformers", "bert.py": "transformers",
         "vit.py": "transformers", **dict.fromkeys(ZOO, "transformers")}


@pytest.mark.parametrize("path", harness.model_programs(), ids=os.path.basename)
def test_model_family(path: str) -> None:
    dep = NEEDS.get(os.path.basename(path))
    if dep:
        pytest.importorskip(dep)
    module = harness.load_module(path)
    problem = None
    if harness.is_jax_program(path):
        args = module.get_inputs()
        tr = translate_jax(module.forward, args, os.path.basename(path)[:-3])
        ir = tr.module
        report = validate(ir, jax_reference(module.forward, args, tr), {})
    else:
        problem = load_problem(path)
        tr = translate_problem(problem)
        ir = tr.module
        report = validate_sized(ir, lambda sz: reference_runner(problem, tr, 0, sz), small_sizes(ir))
    text = print_module(ir)
    assert print_module(parse_and_verify(text, "<model>")) == text
    assert report.ok, report.summary()
    errors = harness.check_expectations(module.EXPECT, harness.lifted_counts(ir), problem)
    assert not errors, "; ".join(errors)


def test_the_corpus_covers_every_family() -> None:
    names = {os.path.basename(p) for p in harness.model_programs()}
    assert {"llama_gqa.py", "bert.py", "vit.py", "moe.py", "unet.py", "flax_transformer.py", *ZOO} <= names
