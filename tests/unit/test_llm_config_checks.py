"""solar-llm's config checks (frontends/llm_config_checks.py, issue 36): each bad config is one line naming the
field, exit 1, before anything is exported and without losing an output; valid published configs pass.
The configs are tiny: loading one constructs the config only (milliseconds), nothing is built or exported."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solar.frontends.llm_config_checks import INT64_MAX, long_context_warning, rope_types
from solar.frontends.llm_models import LlmError, load_config
from solar.tools.solar_llm import run

TINY = {"model_type": "llama", "vocab_size": 128, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 512, "torch_dtype": "bfloat16"}


def _write(tmp_path: Path, fields: dict[str, Any], name: str = "config.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps({k: v for k, v in {**TINY, **fields}.items() if v is not ...}))  # ...: left out
    return str(path)


# ---- bad configs: one line, exit 1, the output kept ----------------------------------------------------------


@pytest.mark.parametrize("fields, message", [
    ({"hidden_act": "gelu_foo"}, "field 'hidden_act': unknown activation 'gelu_foo' (transformers knows gelu, "),
    ({"model_type": "gemma", "hidden_activation": "geglu"}, "field 'hidden_activation': unknown activation 'geglu'"),
    ({"hidden_size": 30}, "field 'hidden_size' 30 is not a multiple of num_attention_heads 4 (and no head_dim is "
                          "given)"),
    ({"head_dim": 7}, "field 'head_dim' 7 is odd: rotary position embeddings rotate pairs of dimensions"),
    ({"hidden_size": 36}, "head_dim 9 (hidden_size 36 / num_attention_heads 4) is odd: rotary position embeddings "
                          "rotate pairs of dimensions"),
    ({"head_dim": 10, "partial_rotary_factor": 0.5},
     "field 'head_dim' 10 × partial_rotary_factor 0.5 = 5 rotated dimensions, odd: rotary position embeddings"),
    ({"rope_scaling": {"rope_type": "banana", "factor": 2.0}},
     "field 'rope_scaling': unknown rope_type 'banana' (transformers knows default, dynamic, linear, llama3, longrope"),
    ({"rope_parameters": {"type": "banana", "rope_theta": 10000.0}},
     "field 'rope_parameters': unknown rope_type 'banana'"),
    ({"rope_scaling": {"rope_type": "dynamic", "factor": 2.0}},
     "field 'rope_scaling': rope_type 'dynamic' cannot be exported: it recomputes its frequencies from the largest "
     "position id at run time, a branch on the data that torch.export cannot hold; a static type (default, linear, "
     "llama3, longrope, "),
    ({"num_key_value_heads": None}, None),  # None: as many as the heads (LlamaConfig), valid
    ({"model_type": "mistral", "num_key_value_heads": ...},
     "field 'num_key_value_heads' 8 (the mistral default) does not divide num_attention_heads 4"),
    ({"model_type": "mistral", "num_attention_heads": 4, "num_key_value_heads": 3},
     "field 'num_key_value_heads' 3 does not divide num_attention_heads 4"),
    ({"model_type": "mixtral", "num_local_experts": 1},
     "field 'num_experts_per_tok' 2 (the mixtral default) is more than the 1 experts (num_local_experts)"),
    ({"model_type": "qwen2_moe", "num_experts": 8, "num_experts_per_tok": 9},
     "field 'num_experts_per_tok' 9 is more than the 8 experts (num_experts)"),
    ({"rope_scaling": {"rope_type": "linear", "factor": 2.0, "original_max_position_embeddings": 10**20}},
     "field 'rope_scaling.original_max_position_embeddings' 1.00e20 is too large to represent: torch's sizes are "
     "64-bit, at most 2^63 - 1"),
    ({"partial_rotary_factor": math.nan}, "field 'partial_rotary_factor' must be a fraction of the head in (0, 1], "
                                          "not nan"),
    ({"torch_dtype": "int8"}, "field 'torch_dtype': 'int8' is not a dtype solar-llm prices (one of float32, bfloat16, "
                              "float16, or auto); --dtype chooses one"),
    ({"torch_dtype": None, "dtype": "float64"}, "field 'dtype': 'float64' is not a dtype solar-llm prices"),
])
def test_a_bad_config_is_one_line_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   fields: dict[str, Any], message: str | None) -> None:
    config = _write(tmp_path, fields)
    if message is None:
        assert load_config(config).shape.kv_heads == 4
        return
    out = tmp_path / "out.json"
    out.write_text("kept")
    assert run([config, "--json", str(out), "--phase", "prefill", "--prompt", "8"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"solar-llm: error: {config}: {message}"), err
    assert err.count("\n") == 1 and err.count("error:") == 1, err
    assert out.read_text() == "kept"


def test_dtype_override_and_aliases(tmp_path: Path) -> None:
    # --dtype chooses the dtype: the config's own, even one this tool does not price, is not read.
    assert str(load_config(_write(tmp_path, {"torch_dtype": "int8"}), "float32").shape.dtype) == "torch.float32"
    assert str(load_config(_write(tmp_path, {"torch_dtype": "auto"})).shape.dtype) == "torch.bfloat16"
    assert str(load_config(_write(tmp_path, {"torch_dtype": "torch.float16"})).shape.dtype) == "torch.float16"
    assert str(load_config(_write(tmp_path, {"torch_dtype": None, "dtype": "float32"})).shape.dtype) == \
        "torch.float32"
    with pytest.raises(LlmError, match=r"^--dtype int8: expected one of float32, bfloat16, float16$"):
        load_config(_write(tmp_path, {}), "int8")


# ---- valid configs pass ---------------------------------------------------------------------------------------


# Tiny configs with the features of published ones that a careless check would refuse.
VALID = {
    # Gemma and Qwen3: an explicit head_dim, with hidden_size != heads × head_dim
    "gemma": {"model_type": "gemma", "hidden_size": 24, "num_attention_heads": 2, "num_key_value_heads": 1,
              "head_dim": 16, "hidden_act": "gelu_pytorch_tanh", "hidden_activation": None},
    "gemma-default-head": {"model_type": "gemma", "hidden_size": 30, "num_attention_heads": 4,
                           "num_key_value_heads": 1},  # no head_dim: GemmaConfig's 256
    "gemma3": {"model_type": "gemma3_text", "hidden_size": 24, "num_attention_heads": 2, "num_key_value_heads": 1,
               "head_dim": 16, "hidden_activation": "gelu_pytorch_tanh", "sliding_window": 8,
               "rope_scaling": None, "rope_local_base_freq": 10000},
    "qwen3": {"model_type": "qwen3", "hidden_size": 32, "num_attention_heads": 4, "head_dim": 16, "dtype": "bfloat16",
              "torch_dtype": None, "rope_scaling": None},
    "llama3.1": {"head_dim": 8, "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                 "original_max_position_embeddings": 128, "rope_type": "llama3"}},
    "qwen2.5-yarn": {"model_type": "qwen2", "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 128,
                                                             "type": "yarn"}},
    "phi3-longrope": {"model_type": "phi3", "original_max_position_embeddings": 128, "num_key_value_heads": 4,
                      "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 4, "long_factor": [2.0] * 4}},
    "phi2-partial": {"model_type": "phi", "hidden_size": 40, "num_attention_heads": 2, "num_key_value_heads": 2,
                     "hidden_act": "gelu_new", "partial_rotary_factor": 0.4, "torch_dtype": "float16"},
    "pythia": {"model_type": "gpt_neox", "hidden_size": 36, "num_attention_heads": 4, "hidden_act": "gelu",
               "rotary_pct": 0.25, "torch_dtype": "float32"},  # head_dim 9, 2 of it rotated
    "deepseek-moe": {"model_type": "deepseek_v2", "n_routed_experts": 4, "num_experts_per_tok": 2,
                     "moe_intermediate_size": 16, "kv_lora_rank": 8, "q_lora_rank": None, "qk_nope_head_dim": 8,
                     "qk_rope_head_dim": 8, "v_head_dim": 8, "num_key_value_heads": 4},
    "relu2": {"hidden_act": "relu2", "torch_dtype": "auto"},
    "swish": {"hidden_act": "swish", "torch_dtype": "float32"},
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_published_kinds_of_config_pass(tmp_path: Path, name: str) -> None:
    cfg = load_config(_write(tmp_path, VALID[name]))
    assert cfg.shape.heads == VALID[name].get("num_attention_heads", 4)


def test_every_activation_and_static_rope_type_transformers_knows_passes(tmp_path: Path) -> None:
    from transformers.activations import ACT2CLS
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    for act in ACT2CLS:
        load_config(_write(tmp_path, {"hidden_act": act}))
    cfg = load_config(_write(tmp_path, {}))
    assert rope_types(cfg.config) >= {"default", *ROPE_INIT_FUNCTIONS}
    assert {"linear", "yarn", "llama3", "longrope", "dynamic"} <= set(ROPE_INIT_FUNCTIONS)


def test_weights_beyond_int64_bytes_are_one_line(tmp_path: Path) -> None:
    # Each size and each two-factor product passes; the experts' stacked weight, E × 2I × H, overflows when the
    # meta model is built (no memory is allocated): one line, not torch's RuntimeError.
    from solar.frontends.llm_models import build_model

    cfg = load_config(_write(tmp_path, {"model_type": "mixtral", "vocab_size": 16, "hidden_size": 2**20,
                                        "intermediate_size": 2**20, "num_hidden_layers": 1, "num_local_experts": 2**22,
                                        "num_experts_per_tok": 2, "num_attention_heads": 2**12,
                                        "num_key_value_heads": 2**12, "head_dim": 2}))
    with pytest.raises(LlmError) as info:
        build_model(cfg.with_layers(1), cfg.shape.dtype)
    assert str(info.value) == ("a weight of the model is too large to represent: Storage size calculation overflowed "
                               "with sizes=[4194304, 2097152, 1048576] (torch's byte counts are 64-bit, at most "
                               "2^63 - 1)")


def test_a_long_context_is_a_warning_not_an_error(tmp_path: Path) -> None:
    cfg = load_config(_write(tmp_path, {}))
    assert long_context_warning(cfg.path, cfg.config, 512) is None
    assert long_context_warning(cfg.path, cfg.config, 601) == (
        f"{cfg.path}: 601 tokens (the longest prompt, or context + generated) are beyond max_position_embeddings "
        "512; priced as asked")


# ---- any input: an answer or one line, never another exception ----------------------------------------------

_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 40), st.integers(2**62, 2**66),
                    st.floats(allow_nan=True), st.sampled_from([math.nan, math.inf, -1.0, 0.0, 0.3, 1e308]),
                    st.sampled_from(["silu", "gelu_foo", "auto", "float8", "", "linear"]),
                    st.dictionaries(st.sampled_from(["rope_type", "type", "factor"]),
                                    st.one_of(st.sampled_from(["dynamic", "linear", "x"]), st.floats(0.5, 4))))
_FIELDS = ["hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim", "hidden_act", "torch_dtype",
           "rope_scaling", "num_experts_per_tok", "num_local_experts", "vocab_size", "max_position_embeddings",
           "intermediate_size", "partial_rotary_factor"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(_FIELDS), _VALUES, min_size=1, max_size=3),
       st.sampled_from(["llama", "mixtral", "gemma"]))
def test_any_field_values_load_or_are_one_line(tmp_path: Path, fields: dict[str, Any], model_type: str) -> None:
    path = _write(tmp_path, {**fields, "model_type": model_type})
    try:
        cfg = load_config(path)
    except LlmError as err:
        assert "\n" not in str(err) and str(err).count("error:") <= 1, str(err)
        return
    s = cfg.shape
    assert s.heads % s.kv_heads == 0 and 0 < s.head_dim <= INT64_MAX
    assert s.experts == 0 or 1 <= s.top_k <= s.experts
