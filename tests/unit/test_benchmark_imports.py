"""Every name a benchmark script imports from solar exists: the scripts run by hand, outside the suite, and
a rename in the library once left benchmarks/llm.py failing at its first import (`_Decode`, since
frontends/llm_steps.py's `DecodeStep`)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"


def _solar_imports(path: Path) -> list[tuple[int, str, str]]:
    """(line, module, name) of each `from solar... import name` in the script, at any depth."""
    return [(node.lineno, node.module, alias.name) for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "solar"
            for alias in node.names]


@pytest.mark.parametrize("script", sorted(p.name for p in BENCHMARKS.glob("*.py")))
def test_benchmark_imports_resolve(script: str) -> None:
    missing = []
    for line, module_name, name in _solar_imports(BENCHMARKS / script):
        module = importlib.import_module(module_name)
        submodule = hasattr(module, "__path__") and importlib.util.find_spec(f"{module_name}.{name}") is not None
        if not hasattr(module, name) and not submodule:
            missing.append(f"{script}:{line}: {module_name}.{name}")
    assert missing == []


def test_the_llm_benchmark_is_checked() -> None:
    assert ("solar.frontends.llm_steps", "DecodeStep") in {(m, n) for _, m, n in _solar_imports(BENCHMARKS / "llm.py")}
