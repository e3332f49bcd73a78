"""Generated kernels run as plain Python, for iteration spaces so small that Numba would cost more than it saves.

Validation runs the IR at reduced sizes, where a kernel executes a few hundred or thousand statements. Numba
pays about a second per process before its first kernel runs (importing it, then loading its type
registries, even when the machine code comes from the disk cache), while the same generated source run by
the interpreter takes microseconds per statement. A kernel whose estimated statement count
(`GeneratedKernel.points`) is at most the limit the caller passes runs here; larger ones go to Numba.

The source is the one Numba compiles (`codegen.generate_kernel`), executed with Numba's names bound to
plain Python: `@njit(...)` is the identity, `prange` is `range`, and the runtime helpers are
`backends/runtime.py` executed without Numba (its `from numba import njit` removed). Values are NumPy
scalars of the arrays' dtypes, so f32 arithmetic stays f32 (NEP 50); floating-point exceptions give inf and
NaN, as Numba's `error_model="numpy"` does. Reductions run in loop order, so sums may differ from Numba's
reassociated ones by rounding, which validation's tolerances allow.
"""

from __future__ import annotations

import ast
import math
import threading
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

_RUNTIME_FILE = Path(__file__).with_name("runtime.py")
_FUNCTIONS: dict[str, Callable[..., Any]] = {}
_LOCK = threading.Lock()


def _identity_decorator(*_args: Any, **_kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return lambda fn: fn


def _without_numba_imports(tree: ast.Module) -> ast.Module:
    tree.body = [node for node in tree.body
                 if not (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "numba")
                 and not (isinstance(node, ast.Import) and any(a.name.split(".")[0] == "numba" for a in node.names))]
    return tree


@cache
def runtime_namespace() -> dict[str, Any]:
    """The runtime helpers as plain Python functions (they call each other through this namespace)."""
    path = str(_RUNTIME_FILE)
    tree = _without_numba_imports(ast.parse(_RUNTIME_FILE.read_text(encoding="utf-8"), path))
    ns: dict[str, Any] = {"__name__": "solar.backends._runtime_python", "__file__": path,
                          "njit": _identity_decorator, "prange": range}
    exec(compile(tree, path, "exec"), ns)
    return ns


def python_kernel(function_source: str) -> Callable[..., Any]:
    """The generated function (`def kernel(...)` under its `@njit` line) as a plain Python function, created
    once per process per source."""
    with _LOCK:
        found = _FUNCTIONS.get(function_source)
        if found is not None:
            return found
        ns: dict[str, Any] = {"math": math, "np": np}
        ns.update({k: v for k, v in runtime_namespace().items() if not k.startswith("__")})
        exec(compile(function_source, "<solar generated kernel>", "exec"), ns)
        fn = _FUNCTIONS[function_source] = ns["kernel"]
        return fn


def call(fn: Callable[..., Any], *args: Any) -> Any:
    """Runs a plain-Python kernel with NumPy's floating-point errors silenced (inf and NaN, as in Numba)."""
    with np.errstate(all="ignore"):
        return fn(*args)
