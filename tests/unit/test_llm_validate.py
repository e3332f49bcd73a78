"""solar-llm's steps validated at reduced sizes: a twin of the config reduced in every dimension and to 2
layers, translated and run through the IR executor against the model (frontends/llm_validate.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers")

from solar.frontends.llm_models import load_config
from solar.frontends.llm_validate import reduced_config, validate_phases, validate_step

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
KERNELBENCH = str(Path(__file__).parent / "data" / "llm" / "tiny_kernelbench_lm.py")


def test_reduced_config_keeps_grouped_query_attention():
    cfg = load_config(str(CONFIGS / "llama-3-8b.json"))
    config, reduced = reduced_config(cfg)
    # 32 query heads over 8 key-value heads: 4 per group, kept; every other dimension shrinks.
    assert (config.num_attention_heads, config.num_key_value_heads) == (8, 2)
    assert (config.head_dim, config.hidden_size, config.num_hidden_layers) == (16, 128, 2)
    assert reduced["num_hidden_layers"] == (32, 2) and reduced["vocab_size"] == (128256, 256)
    assert reduced["intermediate_size"] == (14336, 448)  # 3.5 times the hidden size, as at full size


def test_llama2_7b_decode_validates_at_reduced_sizes():
    check = validate_step(load_config(str(CONFIGS / "llama-2-7b.json")), "decode")
    assert check.report.ok, check.report.error
    assert check.report.outputs and all(o.ok for o in check.report.outputs)
    line = check.line()
    assert line.startswith("decode (DynamicCache) validated at reduced sizes: ok;")
    assert "hidden_size 4096→32" in line and "num_hidden_layers 32→2" in line and "batch 2, context 8" in line


def test_solar_llm_validates_by_default(tmp_path, capsys):
    import json

    from solar.tools.solar_llm import run

    out = tmp_path / "llm.json"
    assert run([str(CONFIGS / "tiny-llama.json"), "--phase", "decode", "--context", "16", "--json", str(out)]) == 0
    assert "validation: decode (DynamicCache) validated at reduced sizes: ok;" in capsys.readouterr().out
    (line,) = json.loads(out.read_text())["validation"]
    assert line.startswith("decode (DynamicCache) validated at reduced sizes: ok;") and "num_hidden_layers 4→2" in line
    assert line.endswith("run at batch 2, context 8")


def test_no_validate_opts_out_and_validate_is_kept_as_a_no_op():
    from solar.tools.solar_llm import build_parser

    parse = build_parser().parse_args
    assert parse(["c.json"]).validate is True
    assert parse(["c.json", "--validate"]).validate is True  # kept for scripts: validation is the default
    assert parse(["c.json", "--no-validate"]).validate is False


def test_static_cache_steps_validate():
    lines, remarks = validate_phases(load_config(str(CONFIGS / "tiny-llama.json"), cache="static"),
                                     ("prefill", "decode"))
    assert remarks == []
    assert [line.split(":")[0] for line in lines] == ["prefill (StaticCache) validated at reduced sizes",
                                                      "decode (StaticCache) validated at reduced sizes"]
    assert all("ok;" in line for line in lines)


def test_a_window_the_priced_sizes_pass_is_validated_shorter_than_the_sizes_run():
    cfg = load_config(str(CONFIGS / "tiny-mistral.json"))  # window 16
    passed = validate_step(cfg, "prefill", longest=64)  # priced past the window: the twin's window is 4 < 8
    assert passed.report.ok, passed.report.error
    assert "sliding_window 16→4" in passed.line()
    within = validate_step(cfg, "prefill", longest=12)  # never past it: the window stays (and never masks)
    assert within.report.ok and "sliding_window" not in within.line()
    assert "the config's dimensions (none larger than the reduced sizes)" in within.line()


def test_kernelbench_file_validates_at_its_own_dimensions_or_says_why_not(monkeypatch):
    from solar.frontends import llm_validate
    from solar.frontends.llm_kernelbench import load_llm

    cfg = load_llm(KERNELBENCH)
    lines, remarks = validate_phases(cfg, ("prefill", "decode"))
    assert remarks == [] and len(lines) == 2
    assert lines[1].startswith("decode (KernelBench-style file) validated at reduced sizes: ok;")
    assert "the file's own dimensions; run at batch 2, context 8" in lines[1]
    monkeypatch.setattr(llm_validate, "KERNELBENCH_MAX_PARAMS", 1000)
    lines, remarks = validate_phases(cfg, ("decode",))
    assert lines == []
    assert remarks == ["decode not validated: a KernelBench-style file's dimensions are its code's, and its 16,384 "
                       "weights are more than the 1,000 validation builds on the CPU"]


def test_a_validation_failure_is_one_located_line_and_exit_1(tmp_path, capsys, monkeypatch):
    from solar.frontends import llm_validate
    from solar.frontends.validate import ValidationReport
    from solar.tools.solar_llm import run

    failed = ValidationReport(ok=False, seed=0, sizes={}, full_sizes={}, error="output 0 differs\nmore detail")
    monkeypatch.setattr(llm_validate, "validate_torch", lambda *args, **kwargs: failed)
    out = tmp_path / "llm.json"
    out.write_text("kept")
    config = str(CONFIGS / "tiny-llama.json")
    assert run([config, "--phase", "decode", "--context", "16", "--json", str(out)]) == 1
    err = capsys.readouterr().err
    assert err == (f"solar-llm: error: {config}: decode (DynamicCache) validated at reduced sizes: FAILED "
                   "(output 0 differs); max abs error 0; num_hidden_layers 4→2; run at batch 2, context 8\n")
    assert out.read_text() == "kept"


def test_a_twin_that_does_not_translate_is_a_remark_not_an_error(monkeypatch):
    from solar.frontends import llm_validate
    from solar.frontends.llm_models import LlmError

    def refuse(*args, **kwargs):
        raise LlmError("model.py:3:1: error: no lowering for aten.foo\ndetail")

    monkeypatch.setattr(llm_validate, "translate_problem", refuse)
    lines, remarks = validate_phases(load_config(str(CONFIGS / "tiny-llama.json")), ("decode",))
    assert lines == []
    assert remarks == ["decode not validated: the reduced step did not translate (model.py:3:1: error: no lowering "
                       "for aten.foo)"]


def test_all_logits_prefill_validates_every_position():
    check = validate_step(load_config(str(CONFIGS / "tiny-llama.json")), "prefill", all_logits=True)
    assert check.report.ok, check.report.error
    assert check.line().startswith("prefill (DynamicCache, every position's logits) validated at reduced sizes: ok;")
    assert list(check.report.outputs[0].shape) == [2, 8, 128]  # batch, prompt, vocabulary: every position
