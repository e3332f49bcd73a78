"""solar-translate: files, --entry with inputs, JAX, exit codes and the written header."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("jax")

from solar.ir import parse_and_verify
from solar.tools.solar_translate import main

ROOT = os.path.join(os.path.dirname(__file__), "..", "frontend_corpus")


def test_translates_and_writes_a_validated_header(tmp_path: object) -> None:
    out = os.path.join(str(tmp_path), "m.sir")
    assert main([os.path.join(ROOT, "torch", "mm_linear_relu.py"), "-o", out]) == 0
    with open(out, encoding="utf-8") as fh:
        text = fh.read()
    assert text.startswith("// Translated by solar-translate from ")
    assert "// Validation: passed; seed 0; sizes BATCH=4" in text
    assert "ran at reduced sizes" in text
    assert "//   reduced dims: BATCH 16 -> 4 (x dim 0)\n" in text
    assert "//   fixed (cannot shrink): x dim 1 (64): tied to the fixed-size weight fc.weight [32, 64]\n" in text
    module = parse_and_verify(text, out)
    assert module.attrs["validation"]["status"] == "passed"
    assert [(p.name, p.default) for p in module.params] == [("BATCH", 16)]


def test_no_validate_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([os.path.join(ROOT, "torch", "shape_views.py"), "--no-validate"]) == 0
    out = capsys.readouterr().out
    assert "Validation: skipped" in out and "solar.module @shape_views" in out


def test_entry_with_shape_specs(capsys: pytest.CaptureFixture[str]) -> None:
    entry = os.path.join(ROOT, "cases", "torch_fn.py") + ":scaled_gelu"
    assert main(["--entry", entry, "--input", "3x5xf32"]) == 0
    assert "@gelu" in capsys.readouterr().out
    net = os.path.join(ROOT, "cases", "torch_fn.py") + ":Net"
    assert main(["--entry", net, "--input", "4x8xf32", "--no-validate"]) == 0


def test_entry_with_npz_inputs(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    path = os.path.join(str(tmp_path), "in.npz")
    np.savez(path, np.random.default_rng(0).standard_normal((2, 5)).astype(np.float32))
    entry = os.path.join(ROOT, "cases", "torch_fn.py") + ":scaled_gelu"
    assert main(["--entry", entry, "--example-inputs", path]) == 0


def test_jax_framework(capsys: pytest.CaptureFixture[str]) -> None:
    entry = os.path.join(ROOT, "jax", "mlp.py") + ":forward"
    assert main(["--framework", "jax", "--entry", entry]) == 0
    out = capsys.readouterr().out
    assert "jax.make_jaxpr" in out and "Validation: passed" in out


def test_unsupported_ops_exit_1_with_every_op(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([os.path.join(ROOT, "cases", "unsupported.py"), "--no-validate"]) == 1
    err = capsys.readouterr().err
    assert err.count("error: unsupported op") == 3
    assert "3 unsupported op(s)" in err


def test_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 1
    assert "give a source file" in capsys.readouterr().err
    entry = os.path.join(ROOT, "cases", "torch_fn.py") + ":scaled_gelu"
    assert main(["--entry", entry, "--input", "3x5xq7"]) == 1
    assert "element type 'q7'" in capsys.readouterr().err
    assert main(["/nonexistent/model.py"]) == 1


def test_missing_source_answers_before_torch_is_imported(tmp_path: Path) -> None:
    """A mistyped path is one line and exit 1, found before torch (seconds of import) is loaded."""
    missing = str(tmp_path / "missing.py")
    probe = ("import sys\nfrom solar.tools.solar_translate import main\n"
             f"print(main([{missing!r}]), 'torch' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["1", "False"]
    assert done.stderr == f"solar-translate: error: {missing}: no such file\n"
    done = subprocess.run([sys.executable, "-m", "solar.tools.solar_translate", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr == f"solar-translate: error: {tmp_path}: is a directory, not a Python file\n"
