"""Imports go only downward: each installed package sits on a floor, and a module may import from its own floor
and the floors below it, never from one above. This table is the one place the floors are written down;
docs/architecture.md draws it. Every import counts, also one inside a function or under TYPE_CHECKING.

Within a floor, imports form no circle either: no module reaches itself through the modules it imports."""

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
            found.append((node.lineno, _absolute(package, node)))
    return found


def import_graph() -> dict[str, dict[str, int]]:
    """Module -> the modules of the packages it imports, each with the line of its first import. `from p
    import x` names the module p.x where there is one, else p."""
    known = {module for module, _ in modules()}
    graph: dict[str, dict[str, int]] = {}
    for module, path in modules():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        edges: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(package, node)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            for target in targets:
                if target in known and target != module:
                    edges.setdefault(target, node.lineno)
        graph[module] = edges
    return graph


def _absolute(package: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    parts = parts[:len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def import_cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def describe_cycle(graph: dict[str, dict[str, int]], component: list[str]) -> str:
    """One circle, with every import inside it (`module:line -> module`), to say where to cut it."""
    inside = set(component)
    arrows = [f"  {module}:{line} imports {target}" for module in component
              for target, line in sorted(graph[module].items()) if target in inside]
    return "import cycle between " + ", ".join(component) + ":\n" + "\n".join(arrows)


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


def test_no_import_cycle() -> None:
    graph = import_graph()
    found = [describe_cycle(graph, c) for c in import_cycles(graph)]
    assert not found, "\n".join(found)


def test_the_cycle_finder_sees_a_function_local_circle() -> None:
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 4}}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert "c:3 imports a" in describe_cycle(graph, ["a", "b", "c"])
    assert import_cycles({"a": {"b": 1}, "b": {}}) == []


def test_the_import_graph_counts_nested_and_type_checking_imports() -> None:
    graph = import_graph()
    # targets/loader.py imports the calibration inside a function, to keep start-up cheap.
    assert "solar.targets.calibrate" in graph["solar.targets.loader"]
    assert "solar.ir.ops.base" in graph["solar.ir.ops.structural"]


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
