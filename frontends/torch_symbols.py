"""Torch's shape symbols as SIR size parameters: the names (`BATCH`, `DIM1`, ...) and the sympy size
expressions of an exported program written as SIR expressions."""

from __future__ import annotations

import functools
from typing import Any

import torch

from solar.ir.expr import Binary, Expr, IntLit, NameRef

from .lowering.core import LoweringError, canon


class SymbolNames:
    """Maps torch's shape symbols (s0, s77) to SIR size parameters: `BATCH` for the first batch dimension,
    then `BATCH2`, `BATCH3`, ... for other leading dims and `DIM1`, `DIM2`, ... for the rest. (Long names:
    kernels bind tensors to short capitals such as `B`, which must not collide with a parameter.)"""

    def __init__(self) -> None:
        self.names: dict[Any, str] = {}
        self.defaults: dict[str, int] = {}
        self.where: dict[str, list[tuple[int, int]]] = {}
        self._counts = {"BATCH": 0, "DIM": 0}

    def declare(self, sym: Any, dim: int, hint: int, input_index: int) -> None:
        if sym not in self.names:
            prefix = "BATCH" if dim == 0 else "DIM"
            n = self._counts[prefix] = self._counts[prefix] + 1
            name = prefix if prefix == "BATCH" and n == 1 else f"{prefix}{n}"
            self.names[sym] = name
            self.defaults[name] = hint
        self.where.setdefault(self.names[sym], []).append((input_index, dim))

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
