"""Out-of-tree passes: a single file (`solar-opt --load-pass-plugin=FILE.py`) and an installed package
(entry-point group `solar.passes`) both register passes that run and appear in --list-passes; a plugin pass
whose name is taken is one clear error."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MLP = str(REPO / "examples" / "mlp.sir")
BIN = Path(sys.executable).parent

PASS_SOURCE = '''
from dataclasses import dataclass

from solar.ir.ops import KernelOp, ModuleOp
from solar.ir.pass_manager import Pass, PassContext


@dataclass(frozen=True)
class CountKernels(Pass):
    """Reports how many kernels the module holds. Leaves the IR unchanged."""

    name = "{name}"
    summary = "Count the kernels of a module"
    preserves_analyses = True

    def apply(self, ctx: PassContext, module: ModuleOp) -> None:
        n = sum(isinstance(op, KernelOp) for op in module.walk())
        ctx.report(f"{{self.name}}: {{n}} kernels")
'''


def solar_opt(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "solar-opt"), *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_a_plugin_file_registers_its_pass(tmp_path: Path) -> None:
    plugin = tmp_path / "count_kernels.py"
    plugin.write_text(PASS_SOURCE.format(name="count-kernels"))
    run = solar_opt(f"--load-pass-plugin={plugin}", "--count-kernels", MLP, "-o", os.devnull)
    assert run.returncode == 0, run.stderr
    assert "count-kernels: 3 kernels" in run.stderr
    listed = solar_opt("--load-pass-plugin", str(plugin), "--list-passes")
    assert re.search(rf"^  --count-kernels +Count the kernels of a module \[plugin file {re.escape(str(plugin))}\]$",
                     listed.stdout, re.M)
    # In a pipeline too, after a built-in pass: lifted kernels are einsums, so none is left.
    run = solar_opt(f"--load-pass-plugin={plugin}", "-p", "lift-einsum,count-kernels", MLP, "-o", os.devnull)
    assert "count-kernels: 0 kernels" in run.stderr


def test_a_plugin_pass_with_a_taken_name_is_an_error(tmp_path: Path) -> None:
    plugin = tmp_path / "clash.py"
    plugin.write_text(PASS_SOURCE.format(name="inline"))
    run = solar_opt(f"--load-pass-plugin={plugin}", "--inline", MLP)
    assert run.returncode == 1
    assert run.stderr == (f"solar-opt: error: pass 'inline' of plugin file {plugin} clashes with the pass of "
                          "that name from built-in\n")


def test_a_plugin_file_without_passes_or_that_fails_is_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty.py"
    empty.write_text("X = 1\n")
    run = solar_opt(f"--load-pass-plugin={empty}", MLP)
    assert run.returncode == 1 and run.stderr == f"solar-opt: error: pass plugin '{empty}' defines no pass (a Pass " \
                                                 "subclass with a name)\n"
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('boom')\n")
    run = solar_opt(f"--load-pass-plugin={broken}", MLP)
    assert run.returncode == 1
    assert run.stderr == f"solar-opt: error: cannot load pass plugin '{broken}': RuntimeError: boom\n"


@pytest.fixture(scope="module")
def installed_plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny plugin distribution, installed (by pip, offline) into a site folder of its own."""
    root = tmp_path_factory.mktemp("plugin")
    pkg = root / "src"
    (pkg / "solar_tiny_plugin").mkdir(parents=True)
    (pkg / "solar_tiny_plugin" / "__init__.py").write_text(PASS_SOURCE.format(name="tiny-count"))
    (pkg / "pyproject.toml").write_text(textwrap.dedent('''
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "solar-tiny-plugin"
        version = "0.1"

        [project.entry-points."solar.passes"]
        tiny-count = "solar_tiny_plugin:CountKernels"

        [tool.setuptools]
        packages = ["solar_tiny_plugin"]
    '''))
    site = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "--no-index",
                    "--target", str(site), str(pkg)], check=True, capture_output=True, timeout=300)
    return site


def test_an_installed_plugin_package_registers_through_its_entry_point(installed_plugin: Path) -> None:
    env = {"PYTHONPATH": str(installed_plugin)}
    listed = solar_opt("--list-passes", env=env)
    assert re.search(r"^  --tiny-count +Count the kernels of a module \[plugin solar-tiny-plugin\]$",
                     listed.stdout, re.M)
    run = solar_opt("--tiny-count", MLP, "-o", os.devnull, env=env)
    assert run.returncode == 0, run.stderr
    assert "tiny-count: 3 kernels" in run.stderr
    # Not installed, the name is unknown as before.
    run = solar_opt("--tiny-count", MLP)
    assert run.returncode == 1 and "unknown argument '--tiny-count'" in run.stderr


HOSTILE_CLASS = '''
from dataclasses import dataclass

from solar.ir.pass_manager import Pass


@dataclass(frozen=True)
class Hostile(Pass):
    name = {name}
{body}
'''
APPLY = "    def apply(self, ctx, module):\n        {0}\n"


@pytest.mark.parametrize("source, message", [
    ("import sys\nsys.exit(0)\n", "error: cannot load pass plugin '{path}': it called sys.exit(0)"),
    (HOSTILE_CLASS.format(name="'my-pass'", body=APPLY.format("import sys; sys.exit(0)")),
     "error: pass 'my-pass' of plugin {path} failed: called sys.exit(0)"),
    (HOSTILE_CLASS.format(name="'my-pass'", body=APPLY.format("raise RuntimeError('oops')")),
     "error: pass 'my-pass' of plugin {path} failed: RuntimeError: oops"),
    (HOSTILE_CLASS.format(name="'my-pass'", body=APPLY.format("return 42")),
     "error: pass 'my-pass' of plugin {path} returned int: apply must return None or a ModuleOp"),
    (HOSTILE_CLASS.format(name="42", body=""), "class Hostile has the name 42; a pass's name is its flag"),
    (HOSTILE_CLASS.format(name="'my-pass'", body="    width: 'Nope' = 1\n"),
     "the options of Hostile cannot be read: NameError: name 'Nope' is not defined"),
    *[(HOSTILE_CLASS.format(name=repr(flag), body=""),
       f"error: pass '{flag}' of plugin file {{path}} has the name of solar-opt's own flag or option '{flag}'")
      for flag in ("emit", "help", "version", "list-passes", "output")],
])
def test_a_plugin_that_misbehaves_is_one_error_naming_it(tmp_path: Path, source: str, message: str) -> None:
    plugin = tmp_path / "hostile.py"
    plugin.write_text(source)
    run = solar_opt(f"--load-pass-plugin={plugin}", "--my-pass", MLP, "-o", os.devnull)
    assert run.returncode == 1, run.stderr
    assert message.format(path=plugin) in run.stderr
    assert "internal error" not in run.stderr and "Traceback" not in run.stderr
