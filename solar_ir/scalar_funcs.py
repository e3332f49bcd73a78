"""The fixed set of scalar functions usable in kernel and einsum bodies, with what each costs.

`flop_kind` names the operation counted by the cost model (docs/ir.md lists them); every function counts as
one operation of its kind per evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ScalarFunc:
    name: str
    arity: int
    flop_kind: str
    floats_only: bool = True  # transcendental functions need a float operand
    returns_bool: bool = False


_TABLE = [
    ScalarFunc("exp", 1, "exp"),
    ScalarFunc("exp2", 1, "exp"),
    ScalarFunc("expm1", 1, "exp"),
    ScalarFunc("log", 1, "log"),
    ScalarFunc("log2", 1, "log"),
    ScalarFunc("log1p", 1, "log"),
    ScalarFunc("sin", 1, "sin"),
    ScalarFunc("cos", 1, "cos"),
    ScalarFunc("tanh", 1, "tanh"),
    ScalarFunc("sigmoid", 1, "sigmoid"),
    ScalarFunc("erf", 1, "erf"),
    ScalarFunc("sqrt", 1, "sqrt"),
    ScalarFunc("rsqrt", 1, "rsqrt"),
    ScalarFunc("reciprocal", 1, "div"),
    ScalarFunc("abs", 1, "abs", floats_only=False),
    ScalarFunc("neg", 1, "add", floats_only=False),
    ScalarFunc("sign", 1, "cmp", floats_only=False),
    ScalarFunc("floor", 1, "round"),
    ScalarFunc("ceil", 1, "round"),
    ScalarFunc("round", 1, "round"),
    ScalarFunc("pow", 2, "pow"),
    ScalarFunc("max", 2, "max", floats_only=False),
    ScalarFunc("min", 2, "min", floats_only=False),
    ScalarFunc("isnan", 1, "cmp", returns_bool=True),
]

FUNCTIONS: dict[str, ScalarFunc] = {f.name: f for f in _TABLE}
# `select(c, a, b)` and `cast<T>(x)` have their own typing rules; they count as 'select' and 'cast'.
SPECIAL_FUNCTIONS = ("select",)
ALL_FUNCTION_NAMES: tuple[str, ...] = (*FUNCTIONS, *SPECIAL_FUNCTIONS)

# The operation kind of each binary operator, for FLOP counting.
BINARY_FLOP_KIND: dict[str, str] = {
    "+": "add", "-": "add", "*": "mul", "/": "div",
    "floordiv": "div", "ceildiv": "div", "mod": "div",
    "==": "cmp", "!=": "cmp", "<": "cmp", "<=": "cmp", ">": "cmp", ">=": "cmp",
    "and": "logic", "or": "logic",
}
