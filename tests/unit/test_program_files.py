"""Program files import as `python model.py` would (frontends/program_files.py): their folder first on
sys.path while they import, and sys.path and sys.modules as they were afterwards, so two programs with a
sibling module of one name in different folders each get their own."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from solar.frontends.diagnostics import SourceError
from solar.frontends.program_files import import_file

SIBLING = "_solar_test_sibling"


def _program(folder: Path, value: int) -> Path:
    folder.mkdir()
    (folder / f"{SIBLING}.py").write_text(f"VALUE = {value}\n")
    (folder / "model.py").write_text(f"from {SIBLING} import VALUE\n\n\ndef read():\n    return VALUE\n")
    return folder / "model.py"


def test_each_program_gets_its_own_sibling_and_the_process_is_left_as_it_was(tmp_path: Path) -> None:
    path_before = list(sys.path)
    first = import_file(str(_program(tmp_path / "a", 1)), "_solar_test_model_a")
    second = import_file(str(_program(tmp_path / "b", 2)), "_solar_test_model_b")
    assert (first.read(), second.read()) == (1, 2)
    assert sys.path == path_before
    assert SIBLING not in sys.modules
    assert "_solar_test_model_a" in sys.modules  # the program itself stays imported, under its name


def test_a_module_of_the_siblings_name_from_elsewhere_is_hidden_then_restored(tmp_path: Path) -> None:
    elsewhere = types.ModuleType(SIBLING)
    elsewhere.__file__ = str(tmp_path / "elsewhere" / f"{SIBLING}.py")
    elsewhere.VALUE = 0  # type: ignore[attr-defined]
    sys.modules[SIBLING] = elsewhere
    try:
        mod = import_file(str(_program(tmp_path / "c", 3)), "_solar_test_model_c")
        assert mod.read() == 3
        assert sys.modules[SIBLING] is elsewhere
    finally:
        sys.modules.pop(SIBLING, None)


def test_a_missing_sibling_is_the_programs_error_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "lonely.py"
    path.write_text(f"from {SIBLING} import VALUE\n")
    path_before = list(sys.path)
    with pytest.raises(SourceError) as info:
        import_file(str(path))
    assert info.value.format().startswith(f"{path}:1:1: error: cannot import '{SIBLING}' while importing {path}")
    assert sys.path == path_before
