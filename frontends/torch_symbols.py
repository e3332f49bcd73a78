"""Torch's shape symbols as SIR size parameters: the names (`BATCH`, `DIM1`, ...) and the sympy size
expressions of an exported program written as SIR expressions."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any

import torch

from solar.ir.expr import Binary, Expr, IntLit, NameRef

from .lowering.core import LoweringError, canon

# Source names of sizes: (input index, dim) → name, or a size's value → name (see SymbolNames).
SizeNames = dict[int | tuple[int, int], str]
_SIZE_SUFFIX = re.compile(r"_(SIZE|DIM)\Z")


def source_size_names(module_globals: Mapping[str, Any]) -> SizeNames:
    """Size parameter names from a source file's module-level integers (KernelBench: `batch_size = 16`):
    value → name (`batch_size` → `BATCH`, `seq_len` → `SEQ_LEN`), for values above 1 that one global alone
    holds (two globals of one value cannot say which a dimension is)."""
    by_value: dict[int, list[str]] = {}
    for key, value in module_globals.items():
        if key.startswith("_") or type(value) is not int or value <= 1 or not key.isidentifier():
            continue
        by_value.setdefault(value, []).append(key)
    out: SizeNames = {}
    for value, keys in by_value.items():
        if len(keys) == 1:
            name = _SIZE_SUFFIX.sub("", re.sub(r"[^A-Z0-9_]", "_", keys[0].upper())).strip("_")
            # Kernels bind tensors to short capitals (A, B, X): a global that short (`B = 16`) still makes
            # its dims one parameter, under the generated name (SHORT_NAME marks it).
            usable = len(name) > 2 and name[0].isalpha() and not re.fullmatch(r"T\d+", name)
            out[value] = name if usable else SHORT_NAME + keys[0]
    return out


SHORT_NAME = "\0"  # prefix of a source name too short to be a parameter's name (see source_size_names)


class SymbolNames:
    """Maps torch's shape symbols (s0, s77) to SIR size parameters. A dimension whose size a source name
    gives (`source`: (input index, dim) → name, as a caller that knows its inputs says, else the size's
    value → name, from `source_size_names`) takes that
    name, and every symbol of that name is one parameter: dimensions the source sizes with one global are
    one quantity, even where export kept them apart (the key and value cache lengths of every layer).
    Others are `BATCH` for the first batch dimension, then `BATCH2`, `BATCH3`, ... for other leading dims
    and `DIM1`, `DIM2`, ... for the rest. (Long names: kernels bind tensors to short capitals such as `B`,
    which must not collide with a parameter.)"""

    def __init__(self, source: Mapping[int | tuple[int, int], str] | None = None) -> None:
        self.names: dict[Any, str] = {}
        self.defaults: dict[str, int] = {}
        self.where: dict[str, list[tuple[int, int]]] = {}
        self.source = dict(source or {})
        self._counts = {"BATCH": 0, "DIM": 0}
        self._short: dict[str, str] = {}  # a short global's marked name -> the parameter it became

    def declare(self, sym: Any, dim: int, hint: int, input_index: int) -> None:
        if sym not in self.names:
            named = self.source.get((input_index, dim)) or self.source.get(hint)
            if named is not None and named.startswith(SHORT_NAME):
                # One parameter for the global's dims, named as the first of them would be.
                named = self._short.setdefault(named, self._next("BATCH" if dim == 0 else "DIM"))
            if named is not None and self.defaults.get(named, hint) == hint:
                self.names[sym] = named
                self.defaults[named] = hint
            else:
                name = self._next("BATCH" if dim == 0 else "DIM")
                self.names[sym] = name
                self.defaults[name] = hint
        self.where.setdefault(self.names[sym], []).append((input_index, dim))

    def _next(self, prefix: str) -> str:
        while True:
            n = self._counts[prefix] = self._counts[prefix] + 1
            name = prefix if prefix == "BATCH" and n == 1 else f"{prefix}{n}"
            if name not in self.defaults and name not in self._short.values():
                return name

    def expr(self, e: Any) -> Expr:
        """A sympy expression of shape symbols as a SIR expression."""
        import sympy
        from torch.utils._sympy.functions import CleanDiv, FloorDiv, Mod, PythonMod

        if isinstance(e, sympy.Integer) or (hasattr(e, "is_Integer") and e.is_Integer):
            return IntLit(int(e))
        if isinstance(e, sympy.Symbol):
            if e not in self.names:
                raise LoweringError(f"the size {e} is data-dependent or not tied to an input dimension")
            return NameRef(self.names[e])
        if isinstance(e, sympy.Add | sympy.Mul):
            op = "+" if isinstance(e, sympy.Add) else "*"
            return functools.reduce(lambda lhs, rhs: Binary(op, lhs, rhs), [self.expr(a) for a in e.args])
        if isinstance(e, FloorDiv | CleanDiv):
            return Binary("floordiv", self.expr(e.args[0]), self.expr(e.args[1]))
        if isinstance(e, Mod | PythonMod):
            return Binary("mod", self.expr(e.args[0]), self.expr(e.args[1]))
        raise LoweringError(f"the size expression {e} is not affine")

    def dim(self, d: Any) -> Any:
        if isinstance(d, int):
            return d
        if isinstance(d, torch.SymInt):
            node_expr = d.node.expr
            try:
                return int(node_expr)
            except (TypeError, ValueError):
                return canon(self.expr(node_expr))
        return int(d)


def named_params(err: Exception, names: Iterable[str]) -> list[str]:
    """The size parameters among `names` that an error names, in the order of `names`."""
    return [n for n in names if re.search(rf"\b{re.escape(n)}\b", str(err))]
