"""What a command imports before it does its work: a pass module, scipy or torch costs start-up time that a
run which never needs them should not pay (benchmarks/startup.py measures the time itself)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from solar.tools._entry import package_version

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEAVY = ("scipy", "numba", "islpy", "torch", "jax", "litellm", "matplotlib")

_PROBE = """
import json, sys
from solar.tools import {module} as tool
try:
    code = tool.{entry}({argv!r})
except SystemExit as stop:
    code = stop.code
sys.stdout.flush()
print("\\n" + json.dumps({{"code": code, "modules": sorted(sys.modules)}}))
"""


def _modules_after(module: str, entry: str, argv: list[str]) -> tuple[int, list[str]]:
    out = subprocess.run([sys.executable, "-c", _PROBE.format(module=module, entry=entry, argv=argv)],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    return result["code"], result["modules"]


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in HEAVY]


def test_solar_opt_on_a_small_file_imports_no_pass_and_no_heavy_library() -> None:
    code, modules = _modules_after("solar_opt", "run", ["examples/matmul.sir", "-o", os.devnull])
    assert code == 0
    assert _heavy(modules) == []
    assert [m for m in modules if m.startswith("solar.passes.") and m != "solar.passes.catalog"] == []


def test_solar_opt_help_and_list_passes_import_no_pass() -> None:
    for argv in (["--help"], ["--list-passes"]):
        code, modules = _modules_after("solar_opt", "run", argv)
        assert code == 0
        assert [m for m in modules if m.startswith("solar.passes.") and m != "solar.passes.catalog"] == []
        assert _heavy(modules) == []


def test_a_pass_that_needs_a_library_still_loads_it() -> None:
    """The other side of laziness: the flag given does import what it needs."""
    code, modules = _modules_after("solar_opt", "run", ["examples/matmul.sir", "--lift-affine", "-o", os.devnull])
    assert code == 0
    assert "solar.passes.lift_affine" in modules and "islpy" in modules


def test_pricing_imports_no_numpy() -> None:
    """numpy is for grids of sizes and running programs; pricing at one point (a network's --sol) skips it."""
    code, modules = _modules_after("solar_opt", "run", ["examples/matmul.sir", "--lift-einsum", "--fuse",
                                                        "--sol=h100", "-o", os.devnull])
    assert code == 0
    assert "solar.passes.sol" in modules and "solar.backends.composition_hooks" in modules
    assert "numpy" not in modules


@pytest.mark.parametrize(("module", "entry"), [("solar_run", "run"), ("solar_translate", "main"),
                                               ("solar_bench", "run")])
def test_help_of_the_other_tools_imports_no_heavy_library(module: str, entry: str) -> None:
    code, modules = _modules_after(module, entry, ["--help"])
    assert code == 0
    assert _heavy(modules) == []
    assert "numpy" not in modules


@pytest.mark.parametrize("tool", ["solar_opt", "solar_run", "solar_translate", "solar_bench"])
def test_every_tool_answers_version(tool: str, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib

    mod = importlib.import_module(f"solar.tools.{tool}")
    entry = mod.main if tool == "solar_translate" else mod.run
    with pytest.raises(SystemExit) as stop:
        entry(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out == f"{tool.replace('_', '-')} {package_version()}\n"
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        assert package_version() == tomllib.load(fh)["project"]["version"]


def test_running_an_f32_module_does_not_import_ml_dtypes() -> None:
    """ml_dtypes (bf16 and f8 storage) costs most of a second to import; f32 programs never need it."""
    code, modules = _modules_after("solar_run", "run", ["examples/matmul.sir", "--random-inputs"])
    assert code == 0
    assert "numba" in modules and "ml_dtypes" not in modules


_EXIT_PROBE = """
import gc, sys
from solar.ir.startup import bulk_imports, exit_now
before = gc.get_freeze_count()
with bulk_imports():
    assert not gc.isenabled()
    import fractions
print(gc.isenabled(), gc.get_freeze_count() > before)
sys.stdout.write("buffered, not yet flushed")
import atexit
atexit.register(lambda: print("teardown ran"))
exit_now({code})
"""


def test_exit_now_flushes_and_skips_the_teardown_and_bulk_imports_freezes() -> None:
    proc = subprocess.run([sys.executable, "-c", _EXIT_PROBE.format(code=3)], capture_output=True, text=True)
    assert proc.returncode == 3
    assert proc.stdout == "True True\nbuffered, not yet flushed"  # no "teardown ran": atexit was skipped


def test_exit_now_under_a_profiler_exits_the_ordinary_way(tmp_path: Path) -> None:
    """cProfile and coverage write their results at exit: skipping the teardown would lose them."""
    script, stats = tmp_path / "probe.py", tmp_path / "probe.prof"
    script.write_text(_EXIT_PROBE.format(code=4))
    proc = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(stats), str(script)], capture_output=True,
                          text=True)
    assert proc.returncode == 0  # cProfile's runner catches the SystemExit(4) exit_now raised here
    assert proc.stdout.endswith("buffered, not yet flushedteardown ran\n")
    assert stats.stat().st_size > 0


_PROCESS_PROBE = """
import gc
from solar.ir.diagnostics import SourceManager
from solar.ir.opt_driver import OptOptions, process
from solar.ir.startup import bulk_objects
text = open("examples/matmul.sir").read()
seen = []
def report(message):
    seen.append(gc.get_freeze_count())
from solar.passes import registry
passes = [registry.create("print-counts")]
print(process(text, "m.sir", 1, passes, OptOptions(), SourceManager(), print, report).ok, seen[0] > 0,
      gc.get_freeze_count(), gc.isenabled())
with bulk_objects():  # objects someone else froze: process leaves the permanent generation alone
    import fractions
frozen = gc.get_freeze_count()
seen.clear()
print(process(text, "m.sir", 1, passes, OptOptions(), SourceManager(), print, report).ok, seen[0] == frozen,
      gc.get_freeze_count() == frozen)
"""


def test_solar_opt_keeps_its_parsed_module_out_of_collections_until_the_chunk_is_done() -> None:
    proc = subprocess.run([sys.executable, "-c", _PROCESS_PROBE], capture_output=True, text=True, cwd=ROOT)
    assert proc.stdout == "True True 0 True\nTrue True True\n", proc.stderr
