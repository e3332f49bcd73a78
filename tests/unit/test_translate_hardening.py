"""solar-translate on programs that break (issue 14, finding 7; issue 18 item 6): the user's own errors are
located diagnostics with exit code 1, sys.exit cannot end the tool silently, data-dependent control flow is one
located error without framework output, and validation survives in-place mutation and nested outputs."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

from solar.tools.solar_translate import main

MLP = os.path.join(os.path.dirname(__file__), "..", "lit", "solar-translate", "Inputs", "mlp.py")

_INPUTS = """

def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return []
"""


def _program(tmp_path: Path, name: str, body: str, inputs: bool = True) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(body).lstrip() + (_INPUTS if inputs else ""), encoding="utf-8")
    return str(path)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_syntax_error_is_located(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _program(tmp_path, "syntax", """
        import torch

        class Model(torch.nn.Module)
            def forward(self, x):
                return x
        """)
    code, _, err = _run([path], capsys)
    assert code == 1
    assert err == (f"{path}:3:29: error: syntax error: expected ':'\n"
                   "class Model(torch.nn.Module)\n" + " " * 28 + "^\n")


def test_failed_import_names_the_module_and_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _program(tmp_path, "imports", """
        import torch

        import solar_missing_helper_module  # noqa: F401


        class Model(torch.nn.Module):
            def forward(self, x):
                return x
        """)
    code, _, err = _run([path], capsys)
    assert code == 1
    first, code_line, caret = err.splitlines()
    assert first == (f"{path}:3:1: error: cannot import 'solar_missing_helper_module' while importing {path}: "
                     "No module named 'solar_missing_helper_module' (it is not installed: "
                     "`pip install solar_missing_helper_module`)")
    assert code_line.startswith("import solar_missing_helper_module") and caret == "^"


@pytest.mark.parametrize(("missing", "hint"), [
    ("einops", " (it is not installed: `pip install einops`)"),
    ("einops.layers.torch", " (it is not installed: `pip install einops`)"),
    ("cv2", " (it is not installed: `pip install opencv-python`)"),
    ("torch.solar_no_such_part", ""),  # the package is there (an older version, say): no install
])
def test_a_missing_module_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch, missing: str, hint: str) -> None:
    """The KernelBench Mamba2 problems import einops, an optional extra (issue 36)."""
    import importlib.util

    from solar.frontends.diagnostics import install_hint

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in ("einops", "cv2")
                        else real(name, *a))
    assert install_hint(ModuleNotFoundError(f"No module named '{missing}'", name=missing)) == hint
    assert install_hint(ImportError("cannot import name 'x' from 'torch'", name="torch")) == ""


def test_a_module_beside_the_program_is_not_an_install(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A module beside the program imports as `python model.py` would import it; where one is still missing
    # (imported later, once the program's folder is off the path again), the hint says where it is.
    (tmp_path / "solar_sibling_helper.py").write_text("SCALE = 3.0\n", encoding="utf-8")
    path = _program(tmp_path, "uses_sibling", """
        import torch
        import solar_sibling_helper


        class Model(torch.nn.Module):
            def forward(self, x):
                return x * solar_sibling_helper.SCALE
        """)
    code, _, err = _run([path, "-o", str(tmp_path / "out.sir")], capsys)
    assert code == 0, err
    from solar.frontends.diagnostics import install_hint

    hint = install_hint(ModuleNotFoundError("No module named 'solar_sibling_helper'", name="solar_sibling_helper"),
                        str(tmp_path))
    assert hint == f" (it is in {tmp_path}, which is not on the import path: add that folder to PYTHONPATH)"


def test_syntax_error_in_an_imported_module_notes_the_importing_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "helper_with_typo.py").write_text("def f(:\n    pass\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    path = _program(tmp_path, "uses_helper", """
        import torch
        import helper_with_typo  # noqa: F401
        """)
    code, _, err = _run([path], capsys)
    assert code == 1
    assert err.startswith(f"{tmp_path / 'helper_with_typo.py'}:1:7: error: syntax error:")
    assert f"{path}:2:1: note: imported here, while importing {path}" in err


def test_sys_exit_while_importing_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _program(tmp_path, "exits", """
        import sys
        import torch
        sys.exit(3)
        """, inputs=False)
    code, _, err = _run([path], capsys)
    assert code == 1
    assert err.startswith(f"{path}:3:1: error: the program called sys.exit(3) while importing {path}: a program "
                          "to translate must return, not exit\n")


def test_sys_exit_in_forward_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _program(tmp_path, "exits_later", """
        import sys
        import torch


        class Model(torch.nn.Module):
            def forward(self, x):
                sys.exit(4)
        """)
    code, _, err = _run([path], capsys)
    assert code == 1
    assert f"{path}:7:9: error: the program called sys.exit(4)" in err


def test_data_dependent_control_flow_is_one_located_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    path = _program(tmp_path, "branches", """
        import torch


        class Model(torch.nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    return x * 2
                return x
        """)
    code, out, err = _run([path], capsys)
    assert code == 1 and out == ""
    lines = err.splitlines()
    assert len(lines) == 3, err
    assert lines[0].startswith(f"{path}:6:9: error: data-dependent control flow: this line depends on a tensor's "
                               "values")
    assert lines[1:] == ["        if x.sum() > 0:", " " * 8 + "^"]


def test_in_place_mutation_of_an_input_validates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _program(tmp_path, "mutates", """
        import torch


        class Model(torch.nn.Module):
            def forward(self, x):
                x.add_(1)
                return x * 2
        """)
    code, out, err = _run([path], capsys)
    assert code == 0, err
    assert "// Validation: passed" in out


def test_nested_outputs_are_flattened_in_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _program(tmp_path, "nested", """
        import torch


        class Model(torch.nn.Module):
            def forward(self, x):
                return {"a": x * 2, "b": [x + 1, (x - 1, x * 3)]}
        """)
    code, out, err = _run([path], capsys)
    assert code == 0, err
    assert "validated 4 output(s): max abs error 0" in out


def test_bad_sizes_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run([MLP, "--validate-size", "-3"], capsys)
    assert (code, err) == (1, "solar-translate: error: --validate-size must be a positive integer, not -3\n")
    code, _, err = _run(["--entry", f"{MLP}:Model", "--input", "0x4xf32"], capsys)
    assert code == 1
    assert err == ("solar-translate: error: bad --input '0x4xf32': every dimension must be positive (SIR tensors "
                   "are not empty)\n")


def test_failed_run_keeps_the_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "kept.sir"
    out.write_text("keep\n", encoding="utf-8")
    path = _program(tmp_path, "exits_too", "import sys\nsys.exit(0)\n", inputs=False)
    code, _, _ = _run([path, "-o", str(out)], capsys)
    assert code == 1
    assert out.read_text(encoding="utf-8") == "keep\n"
    code, _, err = _run([MLP, "-o", str(tmp_path / "missing" / "out.sir")], capsys)
    assert code == 1 and "cannot write the output" in err and "no such directory" in err
