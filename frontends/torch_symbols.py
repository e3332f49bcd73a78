"""Torch's shape symbols as SIR size parameters: the names (`BATCH`, `DIM1`, ...) and the sympy size
expressions of an exported program written as SIR expressions."""

from __future__ import annotations

import functools
from typing import Any

import torch

from solar.ir.dtypes import DType
from solar.ir.expr import Binary, Cast, Expr, FloatLit, IntLit, NameRef

from .lowering.core import LoweringError, SizeFloat, canon
from .size_names import SHORT_NAME, SizeNamer, SizeNames, arg_axis_name, named_params, source_size_names

__all__ = ["SHORT_NAME", "SizeNames", "SymbolNames", "arg_axis_name", "named_params", "source_size_names"]


class SymbolNames(SizeNamer):
    """torch's shape symbols as size parameters (SizeNamer), and export's size expressions in them.
    `ranges` (export's range constraints: symbol -> ValueRanges) decide a `Max` or `Min` of sizes where one
    argument dominates over the whole range the export holds for (`max(P - W + 1, 0)` once a guard gave
    P ≥ W): the expression is that argument, affine."""

    ranges: dict[Any, Any] | None = None

    def expr(self, e: Any) -> Expr:
        """A sympy expression of shape symbols as a SIR expression."""
        import sympy
        from torch.utils._sympy.functions import CleanDiv, FloorDiv, Max, Min, Mod, PythonMod

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
        if isinstance(e, Max | Min | sympy.Max | sympy.Min):
            chosen = self._dominant(e, isinstance(e, Max | sympy.Max))
            if chosen is not None:
                return self.expr(chosen)
        raise LoweringError(f"the size expression {e} is not affine")

    def _dominant(self, e: Any, largest: bool) -> Any:
        """The argument of a Max (`largest`) or Min that is never beaten over the export's ranges."""
        if not self.ranges:
            return None
        from torch.utils._sympy.value_ranges import bound_sympy

        for candidate in e.args:
            def wins(other: Any, candidate: Any = candidate) -> bool:
                bound = bound_sympy(candidate - other, self.ranges)
                return bool(bound.lower >= 0) if largest else bool(bound.upper <= 0)

            if all(other is candidate or wins(other) for other in e.args):
                return candidate
        return None

    def dim(self, d: Any) -> Any:
        if isinstance(d, int):
            return d
        if isinstance(d, torch.SymInt):
            node_expr = d.node.expr
            try:
                return int(node_expr)
            except (TypeError, ValueError):
                return canon(self.expr(node_expr))
        if isinstance(d, torch.SymFloat):
            # Never its hint: `int()` or `float()` of a SymFloat specializes it to the example sizes.
            if d.node.expr.is_number:
                return float(d.node.expr)
            return SizeFloat(self.float_expr(d.node.expr))
        return int(d)

    def float_expr(self, e: Any) -> Expr:
        """A sympy float expression of shape symbols (`FloatTrueDiv(1.0, IntTrueDiv(4*s0*s1, 4))`) as an f64
        SIR expression."""
        import sympy
        from torch.utils._sympy.functions import FloatTrueDiv, IntTrueDiv, ToFloat

        if e.is_number:
            return FloatLit(float(e))
        if e.is_integer:
            return Cast(DType.F64, self.expr(e))
        if isinstance(e, ToFloat):
            return Cast(DType.F64, self.expr(e.args[0]))
        if isinstance(e, IntTrueDiv | FloatTrueDiv):
            return Binary("/", self.float_expr(e.args[0]), self.float_expr(e.args[1]))
        if isinstance(e, sympy.Add | sympy.Mul):
            op = "+" if isinstance(e, sympy.Add) else "*"
            return functools.reduce(lambda lhs, rhs: Binary(op, lhs, rhs), [self.float_expr(a) for a in e.args])
        raise LoweringError(f"the size expression {e} is not supported as a number")
