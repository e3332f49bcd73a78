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
