"""solar-llm FILE.py: a KernelBench-style language model (docs/llm.md, "KernelBench-style files"), built on
the meta device, its prefill and decode steps exported and priced as a config.json's are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solar.bench.llm_report import LlmRequest, analyse_llm
from solar.frontends.llm_kernelbench import load_llm
from solar.frontends.llm_models import LlmError
from solar.targets.loader import load_target
from solar.tools.solar_llm import run

LM = str(Path(__file__).parent / "data" / "llm" / "tiny_kernelbench_lm.py")
H100 = load_target("h100")
HIDDEN, HEADS, VOCAB, HEAD_DIM = 32, 4, 64, 8


@pytest.fixture(scope="module")
def analysis():
    return analyse_llm(LlmRequest(LM, [H100], batches=[1, 4], prompts=[16], contexts=[32], validate=False))


def _point(analysis, phase: str, batch: int) -> dict:
    return next(p.as_record() for p in analysis.points
                if p.phase == phase and p.batch == batch and p.mode == "whole_graph")


def test_shape_from_the_globals_and_the_cache_inputs():
    s = load_llm(LM).shape
    assert (s.layers, s.hidden, s.heads, s.kv_heads, s.head_dim, s.vocab) == (1, HIDDEN, HEADS, HEADS, HEAD_DIM, VOCAB)
    assert s.kv_bytes_per_token == 2 * HEADS * HEAD_DIM * 4  # the two f32 cache inputs, per token


def test_decode_is_exact(analysis):
    attention_proj, mlp, head = 4 * HIDDEN * HIDDEN, 2 * 4 * HIDDEN * HIDDEN, HIDDEN * VOCAB
    kv = 2 * HEADS * HEAD_DIM * 4
    weights = (VOCAB * HIDDEN + attention_proj + mlp + head) * 4
    for batch in (1, 4):
        p = _point(analysis, "decode", batch)
        context = 32
        assert p["macs"] == batch * (attention_proj + mlp + head) + 2 * batch * HEADS * (context + 1) * HEAD_DIM
        assert p["bytes"] == (weights - VOCAB * HIDDEN * 4 + HIDDEN * 4  # embedding: one row (ids may repeat)
                              + batch * 8  # token ids
                              + batch * context * kv  # the cache, read once (appended to in place)
                              + batch * kv  # the new token's keys and values
                              + batch * VOCAB * 4)  # the last position's logits
        assert p["weight_bytes"] == weights and p["kv_cache_bytes"] == batch * (context + 1) * kv


def test_prefill_counts_causal_pairs(analysis):
    prompt = 16
    for batch in (1, 4):
        p = _point(analysis, "prefill", batch)
        linear = 4 * HIDDEN * HIDDEN + 2 * 4 * HIDDEN * HIDDEN
        causal = prompt * (prompt + 1) // 2
        assert p["macs"] == batch * prompt * linear + batch * HIDDEN * VOCAB + 2 * batch * HEADS * causal * HEAD_DIM


def test_cli_json_as_for_a_config(tmp_path):
    out = tmp_path / "kb.json"
    assert run([LM, "--phase", "decode", "--batch", "2", "--context", "8,16", "--no-validate", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["version"] == 1 and doc["model_type"] == "tiny_kernelbench_lm"
    assert len(doc["points"]) == 2 * 3  # contexts × modes
    for p in doc["points"]:
        assert {"phase", "batch", "prompt", "context", "target", "mode", "macs", "flops", "bytes", "weight_bytes",
                "kv_cache_bytes", "time_s", "bound", "fits"} <= set(p)


BASE = '''import torch
from torch import nn
batch_size = 2
prompt = 4
context = 8
num_layers = 1
hidden_size = 8
num_heads = 2
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Linear(8, 8)
    def forward(self, x, cache=None):
        return self.w(x) if cache is None else self.w(torch.cat([cache, x], dim=1))
def get_inputs():
    return [torch.randn(batch_size, prompt, 8)]
def get_decode_inputs():
    return [torch.randn(batch_size, 1, 8), torch.randn(batch_size, context, 8)]
'''


@pytest.mark.parametrize("edit, argv, message", [
    (("class Model", "class Other"), [], r"\.py:1:1: error: a KernelBench-style file defines Model"),
    (("batch_size = 2", "batch_size = 0"), [], r"\.py:3:1: error: global 'batch_size' must be a positive integer"),
    (("num_heads = 2\n", ""), [], r"\.py:1:1: error: missing global 'num_heads'"),
    (("def get_decode_inputs", "def other_inputs"), [], r"\.py:1:1: error: the decode step needs get_decode_inputs"),
    (("batch_size, context, 8)", "batch_size, 2 * context, 8)"), ["--phase", "decode"],
     r"\.py:17:1: error: input 1 dimension 1 of get_decode_inputs\(\) is \d+ where context = \d+"),
    (("x = 1", "x = 1"), ["--tensor-parallel", "3"], "--tensor-parallel 3 does not divide the 2 attention heads"),
    (("x = 1", "x = 1"), ["--context", "0"], "0 is not a positive size|sizes must be positive"),
    (("x = 1", "x = 1"), ["--cache", "static"], "--cache static: a KernelBench-style file's cache is"),
    (("prompt = 4", "prompt = 'long'"), [], r"\.py:4:1: error: global 'prompt' must be a positive integer"),
    (("import torch", "import torch\n1 / 0"), [], r"\.py:2:\d+: error: .*ZeroDivisionError|division by zero"),
])
def test_bad_files_are_one_located_line(tmp_path, capsys, edit, argv, message):
    path = tmp_path / "lm.py"
    path.write_text(BASE.replace(*edit))
    out = tmp_path / "out.json"
    out.write_text("kept")
    assert run([str(path), *argv, "--json", str(out)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    # One `error:`: a located line as it is, any other with the tool's prefix.
    assert err.count("error: ") == 1, err
    assert err.startswith(f"{path}:" if "error: " in message else "solar-llm: error: "), err
    assert __import__("re").search(message, err), err
    assert out.read_text() == "kept"
    with pytest.raises(LlmError):
        analyse_llm(LlmRequest(str(path), [H100], *_request(argv), cache="static" if "static" in argv else "dynamic"))


def _request(argv: list[str]) -> tuple:
    """The request `argv` asks (phases, batches, prompts, contexts, generate, tensor_parallel, ...)."""
    phases = ("decode",) if "decode" in argv else ("prefill", "decode")
    contexts = [0] if "0" in argv else [16]
    chips = 3 if "3" in argv else 1
    return phases, [1], [4], contexts, 1, chips, False, None


def test_a_file_imports_its_sibling_modules_as_python_would(tmp_path: Path):
    """`from _sizes import vocab_size` finds the module beside the file (its folder first on sys.path), with no
    PYTHONPATH, and the process keeps no trace of it."""
    import sys

    text = Path(LM).read_text()
    assert "\nvocab_size = 64\n" in text
    (tmp_path / "_llm_test_sizes.py").write_text("vocab_size = 48\n")
    model = tmp_path / "lm.py"
    model.write_text(text.replace("\nvocab_size = 64\n", "\nfrom _llm_test_sizes import vocab_size  # noqa: E402\n"))
    assert load_llm(str(model)).shape.vocab == 48
    assert "_llm_test_sizes" not in sys.modules and str(tmp_path) not in sys.path
