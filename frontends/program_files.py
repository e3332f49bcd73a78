"""Importing a user's program file as `python model.py` would: its own folder first on `sys.path`, so that
`from _hf import ...` finds the sibling module beside it. The process goes on afterwards (the Python API, a
test, solar-bench's batches), so `sys.path` and `sys.modules` are put back: the sibling modules the file
imported leave `sys.modules` again, and a module of the same name another folder loaded earlier is hidden
while the file imports and returns afterwards. Two programs with a sibling `_hf.py` in different folders
each get their own."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import sysconfig
from collections.abc import Iterator
from types import ModuleType

from .diagnostics import user_code_error
from .hub_configs import configs_only
from .lowering.core import LoweringError


def _inside(module: ModuleType | None, folder: str) -> bool:
    """Whether `module` was loaded from a file (or package) in `folder`."""
    file = getattr(module, "__file__", None)
    if not file:
        return False
    return os.path.abspath(file).startswith(folder + os.sep)


def _siblings(folder: str) -> set[str]:
    """The names of the modules and packages in `folder` (a folder without `__init__.py` shadows nothing:
    a regular package anywhere on `sys.path` wins over it)."""
    try:
        entries = os.listdir(folder)
    except OSError:
        return set()
    return {e[:-3] for e in entries if e.endswith(".py")} | {
        e for e in entries if os.path.isfile(os.path.join(folder, e, "__init__.py"))}


def _installed(module: ModuleType) -> bool:
    """A module of the standard library or an installed package (or one without a file): never hidden,
    as `python model.py` finds those already imported at start-up."""
    file = getattr(module, "__file__", None)
    if not file:
        return True
    paths = sysconfig.get_paths()
    roots = tuple(os.path.abspath(paths[k]) + os.sep for k in ("stdlib", "platstdlib", "purelib", "platlib")
                  if k in paths)
    full = os.path.abspath(file)
    return full.startswith(roots) or "/site-packages/" in full or "/dist-packages/" in full


@contextlib.contextmanager
def program_folder(path: str) -> Iterator[None]:
    """While inside: the folder of the program file `path` first on `sys.path`, and no module of a sibling's
    name that came from elsewhere in `sys.modules`. Afterwards `sys.path` is as it was, the siblings imported
    inside are gone from `sys.modules` (the program keeps its references to them) and the hidden modules are
    back."""
    folder = os.path.dirname(os.path.abspath(path))
    siblings = _siblings(folder)
    saved_path = list(sys.path)
    before = set(sys.modules)
    hidden = {name: mod for name, mod in sys.modules.items()
              if name.split(".", 1)[0] in siblings and not _inside(mod, folder) and not _installed(mod)}
    for name in hidden:
        del sys.modules[name]
    sys.path.insert(0, folder)
    importlib.invalidate_caches()  # a sibling written since the last import of this folder is found
    try:
        yield
    finally:
        sys.path[:] = saved_path
        for name in [n for n in sys.modules if n not in before]:
            if name.split(".", 1)[0] in siblings and _inside(sys.modules[name], folder):
                del sys.modules[name]
        sys.modules.update(hidden)


def import_file(path: str, name: str | None = None) -> ModuleType:
    """Imports the program file `path` as module `name` (which stays in `sys.modules`), its siblings found as
    `python path` finds them (program_folder). The file's own errors and exits are the user's: located."""
    name = name or "_solar_src_" + os.path.splitext(os.path.basename(path))[0].replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, os.path.abspath(path))
    if spec is None or spec.loader is None:
        raise LoweringError(f"cannot import {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    # A Hugging Face model the program names is built from its config alone (hub_configs.py): installed before
    # the program runs when it uses transformers (its own text says so), else once it has imported it.
    if "transformers" in sys.modules or _mentions_transformers(path):
        configs_only()
    try:
        with program_folder(path):
            spec.loader.exec_module(mod)
    except FileNotFoundError:
        sys.modules.pop(name, None)
        raise
    except (Exception, SystemExit) as err:  # the file's own errors (and exits) are the user's: located
        sys.modules.pop(name, None)
        raise user_code_error(err, f"while importing {path}") from None
    if "transformers" in sys.modules:  # through a sibling module: its models are built after the import
        configs_only()
    return mod


def _mentions_transformers(path: str) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "transformers" in f.read()
    except OSError:
        return False
