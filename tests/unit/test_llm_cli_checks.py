"""solar-llm checks what it can before importing torch and transformers (seconds): a mistyped config path, a
directory, or an output that cannot be written is one line and exit 1 at once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CONFIG = str(Path(__file__).parent / "data" / "hf_configs" / "tiny-llama.json")


def _run_probe(argv: list[str]) -> tuple[list[str], str]:
    probe = ("import sys\nfrom solar.tools.solar_llm import run\n"
             f"print(run({argv!r}), 'torch' in sys.modules, 'transformers' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    return done.stdout.split(), done.stderr


def test_missing_config_answers_before_torch_is_imported(tmp_path: Path) -> None:
    missing = str(tmp_path / "config.json")
    out, err = _run_probe([missing])
    assert out == ["1", "False", "False"]
    assert err == f"solar-llm: error: {missing}: cannot read: no such file\n"
    out, err = _run_probe([str(tmp_path)])
    assert out == ["1", "False", "False"]
    assert err == f"solar-llm: error: {tmp_path}: is a directory, not a config.json or a Python file\n"


def test_configs_broken_in_the_file_answer_before_torch_is_imported(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "llama", "vocab_size": 16, "hidden_size": 32, "num_hidden_layers": 1, '
                      '"num_attention_heads": 4, "num_key_value_heads": 3}')
    out, err = _run_probe([str(config)])
    assert out == ["1", "False", "False"]
    assert err == (f"solar-llm: error: {config}: field 'num_key_value_heads' 3 does not divide num_attention_heads "
                   "4: each key-value head serves a whole group of query heads\n")
    config.write_bytes(b'{"model_type": "llama",\n "name": "caf\xe9"}')
    out, err = _run_probe([str(config)])
    assert out == ["1", "False", "False"]
    assert err == f"{config}:2:14: error: not UTF-8: byte 0xe9 at offset 37\n"
    config.write_bytes(b'\xef\xbb\xbf{"model_type": "llama", "vocab_size": 16}')  # a byte-order mark is fine
    out, err = _run_probe([str(config)])
    assert out == ["1", "False", "False"]
    assert err == f"solar-llm: error: {config}: missing field 'hidden_size'\n"
    config.write_text("[" * 100_000 + "]" * 100_000)
    out, err = _run_probe([str(config)])
    assert out == ["1", "False", "False"]
    assert err == f"solar-llm: error: {config}: not JSON that can be read: nested too deeply\n"


def test_unwritable_outputs_answer_before_any_export(tmp_path: Path) -> None:
    keep = tmp_path / "old.json"
    keep.write_text("{}")
    missing_dir = tmp_path / "no"
    out, err = _run_probe([CONFIG, "--json", str(missing_dir / "x.json")])
    assert out == ["1", "False", "False"]
    assert err == (f"solar-llm: error: cannot write --json '{missing_dir / 'x.json'}': "
                   f"no such directory '{missing_dir}'\n")
    out, err = _run_probe([CONFIG, "--plot", str(tmp_path)])
    assert out == ["1", "False", "False"]
    assert err == f"solar-llm: error: cannot write --plot '{tmp_path}': it is a directory\n"
    assert keep.read_text() == "{}"


def test_flags_and_splits_answer_before_torch_is_imported(tmp_path: Path) -> None:
    """The phases, sizes and targets, and a split against the heads, key-value heads and layers the file
    declares, as one line each before torch loads; a search's fixed split too."""
    cases = {("--phase", "both,decode"): "--phase both,decode: expected prefill, decode, both or train",
             ("--batch", "0"): "--batch: 0 is not a positive size",
             ("--tensor-parallel", "3"): "--tensor-parallel 3 does not divide the 4 attention heads",
             ("--tensor-parallel", "4", "--pipeline-parallel", "3"): "--pipeline-parallel 3 does not divide the "
                                                                     "4 layers",
             ("--slo", "tpot=30ms", "--pipeline-parallel", "3"): "--pipeline-parallel 3 does not divide the 4 layers",
             ("--data-parallel", "0"): "--data-parallel 0: must be a positive integer",
             # a search keeps a given 0 (it used to be read as "not given" and searched)
             ("--slo", "ttft=1s", "--tensor-parallel", "0"): "--tensor-parallel 0: must be a positive integer"}
    for flags, message in cases.items():
        out, err = _run_probe([CONFIG, *flags])
        assert (out, err) == (["1", "False", "False"], f"solar-llm: error: {message}\n"), flags
    out, err = _run_probe([CONFIG, "--target", "h999"])
    assert out == ["1", "False", "False"] and err.startswith("solar-llm: error: unknown target 'h999': known ")


def test_a_count_left_to_the_config_class_waits_for_transformers(tmp_path: Path) -> None:
    """Without `num_key_value_heads` the key-value heads are the config class's default, known once
    transformers builds it: the layers' check after it waits too, and says the same then."""
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "llama", "vocab_size": 16, "hidden_size": 32, "num_hidden_layers": 2, '
                      '"num_attention_heads": 4}')
    out, err = _run_probe([str(config), "--pipeline-parallel", "3"])
    assert out == ["1", "True", "True"]
    assert err == "solar-llm: error: --pipeline-parallel 3 does not divide the 2 layers\n"


def test_declared_counts_are_what_the_file_fixes() -> None:
    from solar.bench.llm_flags import Split, check_split_counts
    from solar.frontends.llm_config_checks import DeclaredCounts, declared_counts

    sizes = {"vocab_size": 16, "hidden_size": 64, "num_hidden_layers": 6, "num_attention_heads": 8}
    assert declared_counts({"model_type": "llama", **sizes, "num_key_value_heads": 2}) == DeclaredCounts(6, 8, 2)
    # Falcon's key-value heads depend on its decoder's kind; a multimodal file's text model is read.
    assert declared_counts({"model_type": "falcon", **sizes, "num_key_value_heads": 2}) == DeclaredCounts(6, 8, None)
    assert declared_counts({"model_type": "llava", "text_config": {"n_layer": 3, "n_head": 4}}) == \
        DeclaredCounts(3, 4, None)
    check_split_counts(DeclaredCounts(6, 8, None), Split(pipeline=4))  # waits for the key-value heads
    check_split_counts(DeclaredCounts(6, 8, 2), Split(expert=3))  # and for the routed experts
