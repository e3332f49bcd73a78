"""Torch's shape symbols as SIR size parameters: the names (`BATCH`, `DIM1`, ...) and the sympy size
expressions of an exported program written as SIR expressions."""

from __future__ import annotations

import functools
from typing import Any

import torch

from solar.ir.expr import Binary, Expr, IntLit, NameRef

from .lowering.core import LoweringError, canon
from .size_names import SHORT_NAME, SizeNamer, SizeNames, arg_axis_name, named_params, source_size_names

__all__ = ["SHORT_NAME", "SizeNames", "SymbolNames", "arg_axis_name", "named_params", "source_size_names"]


class SymbolNames(SizeNamer):
    """torch's shape symbols as size parameters (SizeNamer), and export's size expressions in them."""

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
