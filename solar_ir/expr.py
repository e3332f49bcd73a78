"""Scalar and index expressions: one tree for values, indices, loop bounds and symbolic sizes.

The grammar parses every expression the same way; where an affine expression is required (indices, loop
bounds, sizes) the verifier checks it with `affine_violation`, which points at the offending subexpression.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import ClassVar, Union

from .diagnostics import UNKNOWN, Location
from .dtypes import DType


class Expr:
    __slots__ = ("loc",)
    precedence: ClassVar[int] = 9

    def children(self) -> tuple[Expr, ...]:
        return ()

    def __str__(self) -> str:
        return format_expr(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({format_expr(self)!r})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._key() == other._key()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))

    def _key(self) -> tuple:
        raise NotImplementedError

    # Arithmetic builds expressions, so builders can write `X[i, k] * W[j, k] + 1.0`.
    def __add__(self, other: ExprLike) -> Expr:
        return Binary("+", self, as_expr(other))

    def __radd__(self, other: ExprLike) -> Expr:
        return Binary("+", as_expr(other), self)

    def __sub__(self, other: ExprLike) -> Expr:
        return Binary("-", self, as_expr(other))

    def __rsub__(self, other: ExprLike) -> Expr:
        return Binary("-", as_expr(other), self)

    def __mul__(self, other: ExprLike) -> Expr:
        return Binary("*", self, as_expr(other))

    def __rmul__(self, other: ExprLike) -> Expr:
        return Binary("*", as_expr(other), self)

    def __truediv__(self, other: ExprLike) -> Expr:
        return Binary("/", self, as_expr(other))

    def __neg__(self) -> Expr:
        return negate(self, self.loc)


ExprLike = Union["Expr", int, float, bool, str]


class IntLit(Expr):
    __slots__ = ("value",)

    def __init__(self, value: int, loc: Location = UNKNOWN) -> None:
        self.value = value
        self.loc = loc

    def _key(self) -> tuple:
        return (self.value,)


class FloatLit(Expr):
    __slots__ = ("value",)

    def __init__(self, value: float, loc: Location = UNKNOWN) -> None:
        self.value = value
        self.loc = loc

    def _key(self) -> tuple:
        return (repr(self.value),)


class BoolLit(Expr):
    __slots__ = ("value",)

    def __init__(self, value: bool, loc: Location = UNKNOWN) -> None:
        self.value = value
        self.loc = loc

    def _key(self) -> tuple:
        return (self.value,)


class IndexRef(Expr):
    """A loop index (`%i`) of an `affine.for` or an enclosing `solar.for`."""

    __slots__ = ("name",)

    def __init__(self, name: str, loc: Location = UNKNOWN) -> None:
        self.name = name  # without the leading '%'
        self.loc = loc

    def _key(self) -> tuple:
        return (self.name,)


class NameRef(Expr):
    """A bare name: a size parameter, or in an einsum body the element of a bound operand."""

    __slots__ = ("name",)

    def __init__(self, name: str, loc: Location = UNKNOWN) -> None:
        self.name = name
        self.loc = loc

    def _key(self) -> tuple:
        return (self.name,)


class Access(Expr):
    """An element of a tensor bound in a kernel: `X[%i, %k + 1]`."""

    __slots__ = ("indices", "tensor")

    def __init__(self, tensor: str, indices: tuple[Expr, ...], loc: Location = UNKNOWN) -> None:
        self.tensor = tensor
        self.indices = indices
        self.loc = loc

    def children(self) -> tuple[Expr, ...]:
        return self.indices

    def _key(self) -> tuple:
        return (self.tensor, self.indices)


class Unary(Expr):
    __slots__ = ("op", "operand")

    def __init__(self, op: str, operand: Expr, loc: Location = UNKNOWN) -> None:
        self.op = op  # '-' or 'not'
        self.operand = operand
        self.loc = loc

    @property
    def precedence(self) -> int:  # type: ignore[override]
        return 7 if self.op == "-" else 3

    def children(self) -> tuple[Expr, ...]:
        return (self.operand,)

    def _key(self) -> tuple:
        return (self.op, self.operand)


BINARY_PRECEDENCE: dict[str, int] = {
    "or": 1, "and": 2,
    "==": 4, "!=": 4, "<": 4, "<=": 4, ">": 4, ">=": 4,
    "+": 5, "-": 5,
    "*": 6, "/": 6, "floordiv": 6, "ceildiv": 6, "mod": 6,
}
COMPARISONS = frozenset({"==", "!=", "<", "<=", ">", ">="})
LOGICAL = frozenset({"and", "or"})


class Binary(Expr):
    __slots__ = ("lhs", "op", "rhs")

    def __init__(self, op: str, lhs: ExprLike, rhs: ExprLike, loc: Location | None = None) -> None:
        self.op = op
        self.lhs = lhs = as_expr(lhs)
        self.rhs = as_expr(rhs)
        self.loc = lhs.loc if loc is None else loc

    @property
    def precedence(self) -> int:  # type: ignore[override]
        return BINARY_PRECEDENCE[self.op]

    def children(self) -> tuple[Expr, ...]:
        return (self.lhs, self.rhs)

    def _key(self) -> tuple:
        return (self.op, self.lhs, self.rhs)


class Call(Expr):
    """A scalar function (see `scalar_funcs.FUNCTIONS`), or `max`/`min` bounds of an affine loop."""

    __slots__ = ("args", "func")

    def __init__(self, func: str, args: tuple[Expr, ...], loc: Location = UNKNOWN) -> None:
        self.func = func
        self.args = args
        self.loc = loc

    def children(self) -> tuple[Expr, ...]:
        return self.args

    def _key(self) -> tuple:
        return (self.func, self.args)


class Cast(Expr):
    __slots__ = ("dtype", "operand")

    def __init__(self, dtype: DType, operand: Expr, loc: Location = UNKNOWN) -> None:
        self.dtype = dtype
        self.operand = operand
        self.loc = loc

    def children(self) -> tuple[Expr, ...]:
        return (self.operand,)

    def _key(self) -> tuple:
        return (self.dtype, self.operand)


# ---- construction helpers -------------------------------------------------------------------------


def negate(operand: Expr, loc: Location) -> Expr:
    """Unary minus, folded into literals so that `-3` is one literal (and prints back the same)."""
    if isinstance(operand, IntLit) and -operand.value <= (1 << 63) - 1:  # -(-2**63) is no 64-bit literal
        return IntLit(-operand.value, loc)
    if isinstance(operand, FloatLit):
        return FloatLit(-operand.value, loc)
    return Unary("-", operand, loc)


def as_expr(value: ExprLike) -> Expr:
    """Builder convenience: ints, floats and bools become literals, '%i' an index, other strings names."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool):
        return BoolLit(value)
    if isinstance(value, int):
        return IntLit(value)
    if isinstance(value, float):
        return FloatLit(value)
    if value.startswith("%"):
        return IndexRef(value[1:])
    return NameRef(value)


# ---- traversal ------------------------------------------------------------------------------------


def walk(expr: Expr) -> Iterator[Expr]:
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children()))


def rewrite(expr: Expr, fn: Callable[[Expr], Expr | None]) -> Expr:
    """Rebuilds `expr` bottom-up; `fn` returns a replacement for a node or None to keep it."""
    if isinstance(expr, Access):
        new: Expr = Access(expr.tensor, tuple(rewrite(i, fn) for i in expr.indices), expr.loc)
    elif isinstance(expr, Unary):
        new = negate(rewrite(expr.operand, fn), expr.loc) if expr.op == "-" else Unary(
            expr.op, rewrite(expr.operand, fn), expr.loc)
    elif isinstance(expr, Binary):
        new = Binary(expr.op, rewrite(expr.lhs, fn), rewrite(expr.rhs, fn), expr.loc)
    elif isinstance(expr, Call):
        new = Call(expr.func, tuple(rewrite(a, fn) for a in expr.args), expr.loc)
    elif isinstance(expr, Cast):
        new = Cast(expr.dtype, rewrite(expr.operand, fn), expr.loc)
    else:
        new = expr
    replaced = fn(new)
    return new if replaced is None else replaced


def substitute_names(expr: Expr, values: dict[str, Expr]) -> Expr:
    return rewrite(expr, lambda e: values.get(e.name) if isinstance(e, NameRef) else None)


# ---- printing -------------------------------------------------------------------------------------


def format_float(value: float) -> str:
    text = repr(value)
    # repr gives the shortest round-trip form; make sure it lexes as a float, not an int.
    if text[-1].isdigit() and "." not in text and "e" not in text and "n" not in text:
        text += ".0"
    return text


def format_expr(expr: Expr) -> str:
    if isinstance(expr, IntLit):
        return str(expr.value)
    if isinstance(expr, FloatLit):
        return format_float(expr.value)
    if isinstance(expr, BoolLit):
        return "true" if expr.value else "false"
    if isinstance(expr, IndexRef):
        return "%" + expr.name
    if isinstance(expr, NameRef):
        return expr.name
    if isinstance(expr, Access):
        return f"{expr.tensor}[{', '.join(format_expr(i) for i in expr.indices)}]"
    if isinstance(expr, Call):
        return f"{expr.func}({', '.join(format_expr(a) for a in expr.args)})"
    if isinstance(expr, Cast):
        return f"cast<{expr.dtype.spelling}>({format_expr(expr.operand)})"
    if isinstance(expr, Unary):
        inner = format_expr(expr.operand)
        operand_prec = _print_precedence(expr.operand)
        if expr.op == "-":
            if operand_prec < 7 or inner.startswith("-"):
                inner = f"({inner})"
            return "-" + inner
        if operand_prec < 3:
            inner = f"({inner})"
        return "not " + inner
    if isinstance(expr, Binary):
        prec = BINARY_PRECEDENCE[expr.op]
        lhs, rhs = format_expr(expr.lhs), format_expr(expr.rhs)
        lp, rp = _print_precedence(expr.lhs), _print_precedence(expr.rhs)
        # Left-associative; comparisons do not chain, so both sides must bind tighter.
        if lp < prec or (prec == 4 and lp == 4):
            lhs = f"({lhs})"
        if rp <= prec:
            rhs = f"({rhs})"
        return f"{lhs} {expr.op} {rhs}"
    raise TypeError(f"not an expression: {expr!r}")


def _print_precedence(expr: Expr) -> int:
    if isinstance(expr, IntLit | FloatLit) and (expr.value < 0 or repr(expr.value).startswith("-")):
        return 7  # a negative literal prints with a leading minus, like a unary minus
    return expr.precedence


# ---- affine analysis ------------------------------------------------------------------------------


def constant_value(expr: Expr) -> int | None:
    """The value of an integer expression without variables, or None."""
    if isinstance(expr, IntLit):
        return expr.value
    if isinstance(expr, Unary) and expr.op == "-":
        v = constant_value(expr.operand)
        return None if v is None else -v
    if isinstance(expr, Binary):
        a, b = constant_value(expr.lhs), constant_value(expr.rhs)
        if a is None or b is None:
            return None
        return _fold_int(expr.op, a, b)
    return None


def _fold_int(op: str, a: int, b: int) -> int | None:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if b == 0:
        return None
    if op == "floordiv":
        return a // b
    if op == "ceildiv":
        return -((-a) // b)
    if op == "mod":
        return a % b
    return None


def affine_violation(expr: Expr) -> tuple[Expr, str] | None:
    """Checks that `expr` is (quasi-)affine: integer combinations of indices and parameters, with
    `floordiv`/`ceildiv`/`mod` by positive constants. Returns the offending node and why, or None."""
    if isinstance(expr, IntLit | IndexRef | NameRef):
        return None
    if isinstance(expr, Unary) and expr.op == "-":
        return affine_violation(expr.operand)
    if isinstance(expr, Binary):
        if expr.op in ("+", "-"):
            return affine_violation(expr.lhs) or affine_violation(expr.rhs)
        if expr.op == "*":
            bad = affine_violation(expr.lhs) or affine_violation(expr.rhs)
            if bad:
                return bad
            if constant_value(expr.lhs) is None and constant_value(expr.rhs) is None:
                return expr, f"`{format_expr(expr)}` multiplies two variables"
            return None
        if expr.op in ("floordiv", "ceildiv", "mod"):
            bad = affine_violation(expr.lhs)
            if bad:
                return bad
            divisor = constant_value(expr.rhs)
            if divisor is None or divisor <= 0:
                return expr, f"`{format_expr(expr)}` divides by `{format_expr(expr.rhs)}`, not a positive constant"
            return None
        return expr, f"`{format_expr(expr)}` uses `{expr.op}`"
    if isinstance(expr, Access):
        return expr, f"`{format_expr(expr)}` reads a tensor (indirect access needs solar.gather)"
    return expr, f"`{format_expr(expr)}` is not an integer expression of indices and size parameters"


LinearForm = tuple[tuple[tuple[str, int], ...], int]


def linear_form(expr: Expr, atoms: bool = False) -> LinearForm | None:
    """`expr` as (sorted (name, coefficient) pairs, constant) if it is linear; names are '%i' for indices
    and bare for parameters. None for non-linear or quasi-affine expressions, unless `atoms`: then each
    such subexpression (`N floordiv 2`) is one more variable, named by its text."""
    coeffs: dict[str, int] = {}
    const = _accumulate_linear(expr, 1, coeffs, atoms)
    if const is None:
        return None
    return tuple(sorted((k, v) for k, v in coeffs.items() if v != 0)), const


def _accumulate_linear(expr: Expr, scale: int, coeffs: dict[str, int], atoms: bool = False) -> int | None:
    if isinstance(expr, IntLit):
        return scale * expr.value
    if isinstance(expr, IndexRef | NameRef):
        key = "%" + expr.name if isinstance(expr, IndexRef) else expr.name
        coeffs[key] = coeffs.get(key, 0) + scale
        return 0
    if isinstance(expr, Unary) and expr.op == "-":
        return _accumulate_linear(expr.operand, -scale, coeffs, atoms)
    if isinstance(expr, Binary):
        if expr.op in ("+", "-"):
            a = _accumulate_linear(expr.lhs, scale, coeffs, atoms)
            b = _accumulate_linear(expr.rhs, scale if expr.op == "+" else -scale, coeffs, atoms)
            return None if a is None or b is None else a + b
        if expr.op == "*":
            lc, rc = constant_value(expr.lhs), constant_value(expr.rhs)
            if lc is not None:
                return _accumulate_linear(expr.rhs, scale * lc, coeffs, atoms)
            if rc is not None:
                return _accumulate_linear(expr.lhs, scale * rc, coeffs, atoms)
        if expr.op in ("floordiv", "ceildiv", "mod"):
            value = constant_value(expr)
            if value is not None:
                return scale * value
    if atoms and not isinstance(expr, FloatLit | BoolLit):
        key = format_expr(expr)
        coeffs[key] = coeffs.get(key, 0) + scale
        return 0
    return None


def evaluate_int(expr: Expr, env: dict[str, int]) -> int:
    """Evaluates an integer expression; `env` maps parameter names and '%index' names to values."""
    if isinstance(expr, IntLit):
        return expr.value
    if isinstance(expr, NameRef):
        return env[expr.name]
    if isinstance(expr, IndexRef):
        return env["%" + expr.name]
    if isinstance(expr, Unary) and expr.op == "-":
        return -evaluate_int(expr.operand, env)
    if isinstance(expr, Binary):
        result = _fold_int(expr.op, evaluate_int(expr.lhs, env), evaluate_int(expr.rhs, env))
        if result is not None:
            return result
    if isinstance(expr, Call) and expr.func in ("max", "min") and expr.args:
        values = [evaluate_int(a, env) for a in expr.args]
        return max(values) if expr.func == "max" else min(values)
    raise ValueError(f"cannot evaluate `{format_expr(expr)}` as an integer")


def free_names(expr: Expr) -> Iterator[NameRef]:
    return (e for e in walk(expr) if isinstance(e, NameRef))


def free_indices(expr: Expr) -> Iterator[IndexRef]:
    return (e for e in walk(expr) if isinstance(e, IndexRef))


INF = float("inf")


def int_range(expr: Expr) -> tuple[float, float]:
    """Bounds (lo, hi) that an integer size expression stays within for every value of its parameters (each
    a size, so at least 0), by interval arithmetic: sound but not tight; ±inf where nothing is known."""
    if isinstance(expr, IntLit):
        return expr.value, expr.value
    if isinstance(expr, NameRef):
        return 0, INF
    if isinstance(expr, Unary) and expr.op == "-":
        lo, hi = int_range(expr.operand)
        return -hi, -lo
    if isinstance(expr, Call) and expr.func in ("max", "min") and expr.args:
        ranges = [int_range(a) for a in expr.args]
        pick = max if expr.func == "max" else min
        return pick(r[0] for r in ranges), pick(r[1] for r in ranges)
    if not isinstance(expr, Binary):
        return -INF, INF
    (alo, ahi), (blo, bhi) = int_range(expr.lhs), int_range(expr.rhs)
    if expr.op == "+":
        return alo + blo, ahi + bhi
    if expr.op == "-":
        return alo - bhi, ahi - blo
    if expr.op == "*":
        for (clo, chi), (lo, hi) in (((alo, ahi), (blo, bhi)), ((blo, bhi), (alo, ahi))):
            if clo == chi and not math.isinf(clo):  # a constant factor scales the other's range
                ends = (0, 0) if clo == 0 else (clo * lo, clo * hi)
                return min(ends), max(ends)
        if min(alo, blo) >= 0:
            return alo * blo, ahi * bhi
        return -INF, INF
    divisor = constant_value(expr.rhs)
    if divisor is None or divisor <= 0 or expr.op not in ("floordiv", "ceildiv", "mod"):
        return -INF, INF
    if expr.op == "mod":  # floor modulo by a positive constant: in [0, divisor)
        return (alo, ahi) if alo >= 0 and ahi < divisor else (0, divisor - 1)
    scaled = [v / divisor for v in (alo, ahi)]
    rounding = math.floor if expr.op == "floordiv" else math.ceil
    return tuple(v if math.isinf(v) else rounding(v) for v in scaled)  # type: ignore[return-value]
