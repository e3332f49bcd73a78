"""solar-llm's steps validated at reduced sizes: a twin of the config reduced in every dimension and to 2
layers, translated and run through the IR executor against the model (frontends/llm_validate.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers")

from solar.frontends.llm_models import load_config
from solar.frontends.llm_validate import reduced_config, validate_step

CONFIGS = Path(__file__).parent / "data" / "hf_configs"


def test_reduced_config_keeps_grouped_query_attention():
    cfg = load_config(str(CONFIGS / "llama-3-8b.json"))
    config, reduced = reduced_config(cfg)
    # 32 query heads over 8 key-value heads: 4 per group, kept; every other dimension shrinks.
    assert (config.num_attention_heads, config.num_key_value_heads) == (8, 2)
    assert (config.head_dim, config.hidden_size, config.num_hidden_layers) == (16, 128, 2)
    assert reduced["num_hidden_layers"] == (32, 2) and reduced["vocab_size"] == (128256, 256)
    assert reduced["intermediate_size"] == (14336, 96)


def test_llama2_7b_decode_validates_at_reduced_sizes():
    check = validate_step(load_config(str(CONFIGS / "llama-2-7b.json")), "decode")
    assert check.report.ok, check.report.error
    assert check.report.outputs and all(o.ok for o in check.report.outputs)
    line = check.line()
    assert line.startswith("decode validated at reduced sizes: ok;")
    assert "hidden_size 4096→32" in line and "num_hidden_layers 32→2" in line and "batch 2, context 8" in line


def test_solar_llm_validate_prints_what_was_validated(tmp_path, capsys):
    import json

    from solar.tools.solar_llm import run

    out = tmp_path / "llm.json"
    assert run([str(CONFIGS / "tiny-llama.json"), "--phase", "decode", "--context", "16", "--validate",
                "--json", str(out)]) == 0
    assert "validation: decode validated at reduced sizes: ok;" in capsys.readouterr().out
    (line,) = json.loads(out.read_text())["validation"]
    assert line.startswith("decode validated at reduced sizes: ok;") and "num_hidden_layers 4→2" in line
