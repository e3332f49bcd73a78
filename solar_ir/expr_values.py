"""Integer values of size and index expressions: evaluation at given sizes (`evaluate_int`) and the interval
every value stays within (`int_range`). Apart from `expr`, whose node classes and folding they use."""

from __future__ import annotations

import math

from .expr import Binary, Call, Expr, IndexRef, IntLit, NameRef, Unary, constant_value, fold_int, format_expr
from .expr_visitor import ExprVisitor


def evaluate_int(expr: Expr, env: dict[str, int]) -> int:
    """Evaluates an integer expression; `env` maps parameter names and '%index' names to values."""
    return _EVALUATE_INT.visit(expr, env)


class _EvaluateInt(ExprVisitor[int]):
    def visit_int_lit(self, e: IntLit, env: dict[str, int]) -> int:
        return e.value

    def visit_name_ref(self, e: NameRef, env: dict[str, int]) -> int:
        return env[e.name]

    def visit_index_ref(self, e: IndexRef, env: dict[str, int]) -> int:
        return env["%" + e.name]

    def visit_unary(self, e: Unary, env: dict[str, int]) -> int:
        if e.op == "-":
            return -self.visit(e.operand, env)
        return self.visit_other(e, env)

    def visit_binary(self, e: Binary, env: dict[str, int]) -> int:
        result = fold_int(e.op, self.visit(e.lhs, env), self.visit(e.rhs, env))
        return self.visit_other(e, env) if result is None else result

    def visit_call(self, e: Call, env: dict[str, int]) -> int:
        if e.func not in ("max", "min") or not e.args:
            return self.visit_other(e, env)
        values = [self.visit(a, env) for a in e.args]
        return max(values) if e.func == "max" else min(values)

    def visit_other(self, e: Expr, env: dict[str, int]) -> int:
        raise ValueError(f"cannot evaluate `{format_expr(e)}` as an integer")


_EVALUATE_INT = _EvaluateInt()


INF = float("inf")


def int_range(expr: Expr) -> tuple[float, float]:
    """Bounds (lo, hi) that an integer size expression stays within for every value of its parameters (each
    a size, so at least 0), by interval arithmetic: sound but not tight; ±inf where nothing is known."""
    return _INT_RANGE.visit(expr)


class _IntRange(ExprVisitor[tuple[float, float]]):
    def visit_int_lit(self, e: IntLit) -> tuple[float, float]:
        return e.value, e.value

    def visit_name_ref(self, e: NameRef) -> tuple[float, float]:
        return 0, INF

    def visit_unary(self, e: Unary) -> tuple[float, float]:
        if e.op != "-":
            return -INF, INF
        lo, hi = self.visit(e.operand)
        return -hi, -lo

    def visit_call(self, e: Call) -> tuple[float, float]:
        if e.func not in ("max", "min") or not e.args:
            return -INF, INF
        ranges = [self.visit(a) for a in e.args]
        pick = max if e.func == "max" else min
        return pick(r[0] for r in ranges), pick(r[1] for r in ranges)

    def visit_binary(self, e: Binary) -> tuple[float, float]:
        (alo, ahi), (blo, bhi) = self.visit(e.lhs), self.visit(e.rhs)
        if e.op == "+":
            return alo + blo, ahi + bhi
        if e.op == "-":
            return alo - bhi, ahi - blo
        if e.op == "*":
            for (clo, chi), (lo, hi) in (((alo, ahi), (blo, bhi)), ((blo, bhi), (alo, ahi))):
                if clo == chi and not math.isinf(clo):  # a constant factor scales the other's range
                    ends = (0, 0) if clo == 0 else (clo * lo, clo * hi)
                    return min(ends), max(ends)
            if min(alo, blo) >= 0:
                return alo * blo, ahi * bhi
            return -INF, INF
        divisor = constant_value(e.rhs)
        if divisor is None or divisor <= 0 or e.op not in ("floordiv", "ceildiv", "mod"):
            return -INF, INF
        if e.op == "mod":  # floor modulo by a positive constant: in [0, divisor)
            return (alo, ahi) if alo >= 0 and ahi < divisor else (0, divisor - 1)
        scaled = [v / divisor for v in (alo, ahi)]
        rounding = math.floor if e.op == "floordiv" else math.ceil
        return tuple(v if math.isinf(v) else rounding(v) for v in scaled)  # type: ignore[return-value]

    def visit_other(self, e: Expr) -> tuple[float, float]:
        return -INF, INF


_INT_RANGE = _IntRange()
