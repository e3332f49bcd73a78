"""Every pass, as plain data: where its class is and what `--help` and `--list-passes` say about it. It is
the one list of passes (the registry in `solar.passes` is made from it), derived from the pass classes
(their `name`, `summary`, `primary_option`, `free_options` and option fields), which are the one copy: a
new pass is its file. Reading it imports no pass module (a pass can pull in scipy, islpy or numba, a second
of start-up for a command that never runs it): the table is derived once, in a child process, and kept
beside the bytecode (or in the user's cache) until a file of passes/ changes.
`python -m solar.passes.catalog` prints it as JSON."""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import sys
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from solar.ir.pass_manager import option_type_name


@dataclass(frozen=True)
class OptionInfo:
    name: str
    type: str  # the type's name as --list-passes prints it ("str", "bool")
    default: str | None  # repr() of the default; None when the option has none


@dataclass(frozen=True)
class PassInfo:
    target: str  # "module:Class", imported only when the pass runs
    summary: str
    options: tuple[OptionInfo, ...] = ()
    primary_option: str | None = None
    free_options: bool = False


_CHILD = "SOLAR_DERIVING_PASS_CATALOG"  # set in the child process that imports the pass classes


def _sources() -> list[Path]:
    return sorted(p for p in Path(__file__).parent.glob("*.py") if p.name not in ("__init__.py", "catalog.py"))


def _key() -> list[list[Any]]:
    """What the derived table depends on: every pass module's name, size and modification time."""
    out: list[list[Any]] = []
    for path in _sources():
        stat = path.stat()
        out.append([path.name, stat.st_size, stat.st_mtime_ns])
    return out


def _cache_files() -> Iterator[Path]:
    """Where the derived table is kept: beside the bytecode, else in the user's cache (a read-only install)."""
    here = Path(__file__).resolve().parent
    yield here / "__pycache__" / "catalog.json"
    import hashlib  # start-up: only when the first place cannot be written

    tag = hashlib.sha256(str(here).encode()).hexdigest()[:16]
    yield Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "solar" / f"catalog-{tag}.json"


def _encode(catalog: dict[str, PassInfo]) -> dict[str, Any]:
    return {name: dataclasses.asdict(info) for name, info in catalog.items()}


def _decode(data: dict[str, Any]) -> dict[str, PassInfo]:
    return {name: PassInfo(d["target"], d["summary"], tuple(OptionInfo(**o) for o in d["options"]),
                           d["primary_option"], d["free_options"]) for name, d in data.items()}


def _from_classes() -> dict[str, PassInfo]:
    """The table from the pass classes themselves: every `Pass` subclass with a name in passes/."""
    from solar.ir.pass_manager import Pass

    found: dict[str, PassInfo] = {}
    for path in _sources():
        try:
            module = importlib.import_module(f"solar.passes.{path.stem}")
        except ImportError:  # an optional library missing: that pass is not offered (nothing else breaks)
            continue
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, Pass) and value.__module__ == module.__name__
                    and getattr(value, "name", "")):
                found[value.name] = info_of_class(value)
    return dict(sorted(found.items()))


def _derive() -> dict[str, PassInfo]:
    """The table, from its cache when no pass module changed since; else from the classes, imported in a
    child process so that this one stays free of every pass's libraries, and cached."""
    if os.environ.get(_CHILD):
        return {}  # the child reads the classes themselves (its `solar.passes` registry stays empty)
    key = _key()
    for path in _cache_files():
        try:
            data = json.loads(path.read_text())
            if data["key"] == key:
                return _decode(data["catalog"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    import subprocess  # start-up: only when the table is derived again
    import tempfile

    child = subprocess.run([sys.executable, "-m", "solar.passes.catalog"], capture_output=True, text=True,
                           env={**os.environ, _CHILD: "1"}, timeout=300)
    if child.returncode != 0:
        raise RuntimeError(f"the pass classes could not be read: {child.stderr.strip().splitlines()[-1:]}")
    catalog = _decode(json.loads(child.stdout))
    text = json.dumps({"key": key, "catalog": _encode(catalog)})
    for path in _cache_files():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as tmp:
                tmp.write(text)
            os.replace(tmp.name, path)
            break
        except OSError:
            continue
    return catalog


class _Catalog(Mapping[str, PassInfo]):
    """CATALOG: derived on first use (see the module's docstring)."""

    def __init__(self) -> None:
        self._table: dict[str, PassInfo] | None = None

    def _get(self) -> dict[str, PassInfo]:
        if self._table is None:
            self._table = _derive()
        return self._table

    def __getitem__(self, name: str) -> PassInfo:
        return self._get()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())


CATALOG: Mapping[str, PassInfo] = _Catalog()


def info_of_class(cls: Any) -> PassInfo:
    """The catalog entry a pass class gives (what the table above must equal)."""
    options = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if cls.free_options and f.name == "options":
            continue
        default = None if f.default is dataclasses.MISSING else repr(f.default)
        options.append(OptionInfo(f.name, option_type_name(hints.get(f.name, f.type)), default))
    return PassInfo(f"{cls.__module__}:{cls.__qualname__}", cls.summary, tuple(options), cls.primary_option,
                    cls.free_options)


if __name__ == "__main__":  # the child of _derive
    json.dump(_encode(_from_classes()), sys.stdout)
