"""Scalar and index expressions: one tree for values, indices, loop bounds and symbolic sizes.

The grammar parses every expression the same way; where an affine expression is required (indices, loop
bounds, sizes) the verifier checks it with `affine_violation`, which points at the offending subexpression.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import ClassVar, Union

from .diagnostics import UNKNOWN, Location
from .dtypes import DType
from .expr_visitor import ExprVisitor


class Expr:
    __slots__ = ("_hash", "loc")
    precedence: ClassVar[int] = 9
    kind: ClassVar[str]  # the name of its case in an `ExprVisitor` (`visit_<kind>`; expr_visitor.KINDS)

    def children(self) -> tuple[Expr, ...]:
        return ()

    def __str__(self) -> str:
        return format_expr(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({format_expr(self)!r})"

    def __eq__(self, other: object) -> bool:
        return self is other or (type(self) is type(other) and self._key() == other._key())  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        # Kept once computed: expressions are never changed after they are built, and a network's sizes
        # (`1 + (-1 + X_2) floordiv 4` ...) are hashed thousands of times as parts of types and keys.
        h: int | None = getattr(self, "_hash", None)
        if h is None:
            h = self._hash = hash((type(self).__name__, self._key()))
        return h

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
    kind = "int_lit"

    def __init__(self, value: int, loc: Location = UNKNOWN) -> None:
        self.value = value
        self.loc = loc

    def _key(self) -> tuple:
        return (self.value,)


class FloatLit(Expr):
    __slots__ = ("value",)
    kind = "float_lit"

    def __init__(self, value: float, loc: Location = UNKNOWN) -> None:
        self.value = value
        self.loc = loc

    def _key(self) -> tuple:
        return (repr(self.value),)


class BoolLit(Expr):
    __slots__ = ("value",)
    kind = "bool_lit"

    def __init__(self, value: bool, loc: Location = UNKNOWN) -> None:
        self.value = value
        self.loc = loc

    def _key(self) -> tuple:
        return (self.value,)


class IndexRef(Expr):
    """A loop index (`%i`) of an `affine.for` or an enclosing `solar.for`."""

    __slots__ = ("name",)
    kind = "index_ref"

    def __init__(self, name: str, loc: Location = UNKNOWN) -> None:
        self.name = name  # without the leading '%'
        self.loc = loc

    def _key(self) -> tuple:
        return (self.name,)


class NameRef(Expr):
    """A bare name: a size parameter, or in an einsum body the element of a bound operand."""

    __slots__ = ("name",)
    kind = "name_ref"

    def __init__(self, name: str, loc: Location = UNKNOWN) -> None:
        self.name = name
        self.loc = loc

    def _key(self) -> tuple:
        return (self.name,)


class Access(Expr):
    """An element of a tensor bound in a kernel: `X[%i, %k + 1]`."""

    __slots__ = ("indices", "tensor")
    kind = "access"

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
    kind = "unary"

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
    kind = "binary"

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
    kind = "call"

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
    kind = "cast"

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
    new = _REBUILD.visit(expr, fn)
    replaced = fn(new)
    return new if replaced is None else replaced


class _Rebuild(ExprVisitor[Expr]):
    """`rewrite`'s step: a node rebuilt from its rewritten operands; a leaf stays as it is."""

    def visit_access(self, e: Access, fn: Callable[[Expr], Expr | None]) -> Expr:
        return Access(e.tensor, tuple(rewrite(i, fn) for i in e.indices), e.loc)

    def visit_unary(self, e: Unary, fn: Callable[[Expr], Expr | None]) -> Expr:
        operand = rewrite(e.operand, fn)
        return negate(operand, e.loc) if e.op == "-" else Unary(e.op, operand, e.loc)

    def visit_binary(self, e: Binary, fn: Callable[[Expr], Expr | None]) -> Expr:
        return Binary(e.op, rewrite(e.lhs, fn), rewrite(e.rhs, fn), e.loc)

    def visit_call(self, e: Call, fn: Callable[[Expr], Expr | None]) -> Expr:
        return Call(e.func, tuple(rewrite(a, fn) for a in e.args), e.loc)

    def visit_cast(self, e: Cast, fn: Callable[[Expr], Expr | None]) -> Expr:
        return Cast(e.dtype, rewrite(e.operand, fn), e.loc)

    def visit_other(self, e: Expr, fn: Callable[[Expr], Expr | None]) -> Expr:
        return e


_REBUILD = _Rebuild()


def substitute_names(expr: Expr, values: dict[str, Expr]) -> Expr:
    return rewrite(expr, lambda e: values.get(e.name) if isinstance(e, NameRef) else None)


# ---- printing -------------------------------------------------------------------------------------


def format_float(value: float) -> str:
    text = repr(value)
    # repr gives the shortest round-trip form; make sure it lexes as a float, not an int.
    if text[-1].isdigit() and "." not in text and "e" not in text and "n" not in text:
        text += ".0"
    return text


class _Format(ExprVisitor[str]):
    """The text of an expression, with the parentheses its operands' precedences need."""

    def visit_int_lit(self, e: IntLit) -> str:
        return str(e.value)

    def visit_float_lit(self, e: FloatLit) -> str:
        return format_float(e.value)

    def visit_bool_lit(self, e: BoolLit) -> str:
        return "true" if e.value else "false"

    def visit_index_ref(self, e: IndexRef) -> str:
        return "%" + e.name

    def visit_name_ref(self, e: NameRef) -> str:
        return e.name

    def visit_access(self, e: Access) -> str:
        return f"{e.tensor}[{', '.join(self.visit(i) for i in e.indices)}]"

    def visit_call(self, e: Call) -> str:
        return f"{e.func}({', '.join(self.visit(a) for a in e.args)})"

    def visit_cast(self, e: Cast) -> str:
        return f"cast<{e.dtype.spelling}>({self.visit(e.operand)})"

    def visit_unary(self, e: Unary) -> str:
        inner = self.visit(e.operand)
        operand_prec = _print_precedence(e.operand)
        if e.op == "-":
            if operand_prec < 7 or inner.startswith("-"):
                inner = f"({inner})"
            return "-" + inner
        if operand_prec < 3:
            inner = f"({inner})"
        return "not " + inner

    def visit_binary(self, e: Binary) -> str:
        prec = BINARY_PRECEDENCE[e.op]
        lhs, rhs = self.visit(e.lhs), self.visit(e.rhs)
        lp, rp = _print_precedence(e.lhs), _print_precedence(e.rhs)
        # Left-associative; comparisons do not chain, so both sides must bind tighter.
        if lp < prec or (prec == 4 and lp == 4):
            lhs = f"({lhs})"
        if rp <= prec:
            rhs = f"({rhs})"
        return f"{lhs} {e.op} {rhs}"


format_expr: Callable[[Expr], str] = _Format().visit  # the visitor's own method: printing is hot


def _print_precedence(expr: Expr) -> int:
    if isinstance(expr, IntLit | FloatLit) and (expr.value < 0 or repr(expr.value).startswith("-")):
        return 7  # a negative literal prints with a leading minus, like a unary minus
    return expr.precedence


# ---- affine analysis ------------------------------------------------------------------------------


class _Constant(ExprVisitor[int | None]):
    """The value of an integer expression without variables, or None."""

    def visit_int_lit(self, e: IntLit) -> int | None:
        return e.value

    def visit_unary(self, e: Unary) -> int | None:
        if e.op != "-":
            return None
        v = self.visit(e.operand)
        return None if v is None else -v

    def visit_binary(self, e: Binary) -> int | None:
        a, b = self.visit(e.lhs), self.visit(e.rhs)
        if a is None or b is None:
            return None
        return fold_int(e.op, a, b)

    def visit_other(self, e: Expr) -> int | None:
        return None


constant_value: Callable[[Expr], int | None] = _Constant().visit  # bound once: folding is hot


def fold_int(op: str, a: int, b: int) -> int | None:
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
    return _AFFINE_VIOLATION.visit(expr)


class _AffineViolation(ExprVisitor[tuple[Expr, str] | None]):
    def visit_int_lit(self, e: IntLit | IndexRef | NameRef) -> tuple[Expr, str] | None:
        return None

    visit_index_ref = visit_name_ref = visit_int_lit

    def visit_unary(self, e: Unary) -> tuple[Expr, str] | None:
        return self.visit(e.operand) if e.op == "-" else self.visit_other(e)

    def visit_binary(self, e: Binary) -> tuple[Expr, str] | None:
        if e.op in ("+", "-"):
            return self.visit(e.lhs) or self.visit(e.rhs)
        if e.op == "*":
            bad = self.visit(e.lhs) or self.visit(e.rhs)
            if bad:
                return bad
            if constant_value(e.lhs) is None and constant_value(e.rhs) is None:
                return e, f"`{format_expr(e)}` multiplies two variables"
            return None
        if e.op in ("floordiv", "ceildiv", "mod"):
            bad = self.visit(e.lhs)
            if bad:
                return bad
            divisor = constant_value(e.rhs)
            if divisor is None or divisor <= 0:
                return e, f"`{format_expr(e)}` divides by `{format_expr(e.rhs)}`, not a positive constant"
            return None
        return e, f"`{format_expr(e)}` uses `{e.op}`"

    def visit_access(self, e: Access) -> tuple[Expr, str] | None:
        return e, f"`{format_expr(e)}` reads a tensor (indirect access needs solar.gather)"

    def visit_other(self, e: Expr) -> tuple[Expr, str] | None:
        return e, f"`{format_expr(e)}` is not an integer expression of indices and size parameters"


_AFFINE_VIOLATION = _AffineViolation()


LinearForm = tuple[tuple[tuple[str, int], ...], int]


def linear_form(expr: Expr, atoms: bool = False) -> LinearForm | None:
    """`expr` as (sorted (name, coefficient) pairs, constant) if it is linear; names are '%i' for indices
    and bare for parameters. None for non-linear or quasi-affine expressions, unless `atoms`: then each
    such subexpression (`N floordiv 2`) is one more variable, named by its text."""
    coeffs: dict[str, int] = {}
    const = _LINEAR.visit(expr, 1, coeffs, atoms)
    if const is None:
        return None
    return tuple(sorted((k, v) for k, v in coeffs.items() if v != 0)), const


class _Linear(ExprVisitor[int | None]):
    """Adds `scale` times `expr` to `coeffs` (name → coefficient) and gives its constant part, or None when
    it is not linear (with `atoms`, a non-linear integer subexpression is one more variable)."""

    def visit_int_lit(self, e: IntLit, scale: int, coeffs: dict[str, int], atoms: bool) -> int | None:
        return scale * e.value

    def visit_index_ref(self, e: IndexRef, scale: int, coeffs: dict[str, int], atoms: bool) -> int | None:
        return self._variable("%" + e.name, scale, coeffs)

    def visit_name_ref(self, e: NameRef, scale: int, coeffs: dict[str, int], atoms: bool) -> int | None:
        return self._variable(e.name, scale, coeffs)

    def visit_unary(self, e: Unary, scale: int, coeffs: dict[str, int], atoms: bool) -> int | None:
        if e.op == "-":
            return self.visit(e.operand, -scale, coeffs, atoms)
        return self.visit_other(e, scale, coeffs, atoms)

    def visit_binary(self, e: Binary, scale: int, coeffs: dict[str, int], atoms: bool) -> int | None:
        if e.op in ("+", "-"):
            a = self.visit(e.lhs, scale, coeffs, atoms)
            b = self.visit(e.rhs, scale if e.op == "+" else -scale, coeffs, atoms)
            return None if a is None or b is None else a + b
        if e.op == "*":
            lc, rc = constant_value(e.lhs), constant_value(e.rhs)
            if lc is not None:
                return self.visit(e.rhs, scale * lc, coeffs, atoms)
            if rc is not None:
                return self.visit(e.lhs, scale * rc, coeffs, atoms)
        if e.op in ("floordiv", "ceildiv", "mod"):
            value = constant_value(e)
            if value is not None:
                return scale * value
        return self.visit_other(e, scale, coeffs, atoms)

    def visit_float_lit(self, e: FloatLit | BoolLit, scale: int, coeffs: dict[str, int], atoms: bool) -> int | None:
        return None

    visit_bool_lit = visit_float_lit

    def visit_other(self, e: Expr, scale: int, coeffs: dict[str, int], atoms: bool) -> int | None:
        return self._variable(format_expr(e), scale, coeffs) if atoms else None

    @staticmethod
    def _variable(key: str, scale: int, coeffs: dict[str, int]) -> int:
        coeffs[key] = coeffs.get(key, 0) + scale
        return 0


_LINEAR = _Linear()


def free_names(expr: Expr) -> Iterator[NameRef]:
    return (e for e in walk(expr) if isinstance(e, NameRef))


def free_indices(expr: Expr) -> Iterator[IndexRef]:
    return (e for e in walk(expr) if isinstance(e, IndexRef))
