"""Imports go only downward: each installed package sits on a floor, and a module may import from its own floor
and the floors below it, never from one above. This table is the one place the floors are written down;
docs/architecture.md draws it. Every import counts, also one inside a function or under TYPE_CHECKING."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Floor of each package, lowest first: (import name, folder, floor). The longest matching name wins, so
# solar.ir.analysis sits above solar.ir.
FLOORS: tuple[tuple[str, str, int], ...] = (
    ("solar.ir", "solar_ir", 0),  # the IR core: types, ops, parser, printer, verifier, pass manager
    ("solar.grammar", "grammar", 0),
    ("solar.ir.analysis", "solar_ir/analysis", 1),  # what passes and backends share: ISL model, counts, units
    ("solar.targets", "targets", 2),  # hardware descriptions, read by the cost model
    ("solar.backends", "backends", 2),  # executor, cost model, tiling, reports
    ("solar.passes", "passes", 3),
    ("solar.frontends", "frontends", 4),
    ("solar.bench", "bench", 5),  # solar-bench's library: translates (frontends), bounds, measures, batches
    ("solar.tools", "tools", 6),
    ("solar", "api", 6),  # the Python API (solar.analyze), beside the tools: it imports lazily from every floor
)
FLOOR_NAMES = {0: "ir core", 1: "ir.analysis", 2: "backends", 3: "passes", 4: "frontends", 5: "bench",
               6: "tools and the API"}


def floor_of(module: str) -> int | None:
    best: tuple[int, int] | None = None
    for name, _, floor in FLOORS:
        if (module == name or module.startswith(name + ".")) and (best is None or len(name) > best[0]):
            best = (len(name), floor)
    return None if best is None else best[1]


def modules() -> list[tuple[str, Path]]:
    """Every module of the installed packages, by import name (each file once, under its deepest package)."""
    out: dict[Path, str] = {}
    for name, folder, _ in sorted(FLOORS, key=lambda f: len(f[1])):
        for path in sorted((REPO / folder).rglob("*.py")):
            rel = path.relative_to(REPO / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out[path] = ".".join([name, *parts])
    return sorted((mod, path) for path, mod in out.items())


def imported(module: str, path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in a module, nested ones included."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found.append((node.lineno, name))
    return found


def upward_arrows() -> list[str]:
    bad = []
    for module, path in modules():
        here = floor_of(module)
        assert here is not None
        for line, target in imported(module, path):
            there = floor_of(target)
            if there is not None and there > here:
                bad.append(f"{path.relative_to(REPO)}:{line}: {module} ({FLOOR_NAMES[here]}) imports {target} "
                           f"({FLOOR_NAMES[there]})")
    return bad


def test_every_package_folder_has_a_floor() -> None:
    folders = {folder for _, folder, _ in FLOORS}
    for pyproject_dir in ("solar_ir", "grammar", "passes", "frontends", "backends", "targets", "tools", "api"):
        assert pyproject_dir in folders
    assert len(modules()) > 50


def test_no_import_goes_up() -> None:
    assert upward_arrows() == []


@pytest.mark.parametrize(("module", "target", "up"), [
    ("solar.backends.cost", "solar.passes.fuse", True),
    ("solar.ir.analysis.units", "solar.ir.ops", False),
    ("solar.ir.printer", "solar.ir.analysis.counts", True),
    ("solar.passes.sol", "solar.backends.cost", False),
    ("solar.frontends.validate", "solar.tools.solar_opt", True),
])
def test_the_floor_table_orders_packages(module: str, target: str, up: bool) -> None:
    here, there = floor_of(module), floor_of(target)
    assert here is not None and there is not None
    assert (there > here) is up
