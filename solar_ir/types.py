"""Tensor types: `tensor<64x512xf32>`, with dimensions that may be size parameters or expressions of them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .diagnostics import UNKNOWN
from .dtypes import DType, dtype_from_name
from .expr import Binary, Expr, IntLit, NameRef, format_expr, linear_form, negate
from .expr_values import evaluate_int

Dim = int | Expr
PARAM_NAME = re.compile(r"[A-Z][A-Z0-9_]*\Z")
# An integer literal longer than this is out of range before it is converted (Python refuses to convert one of
# more than 4,300 digits at all); shorter ones are converted and judged by the 64-bit check after parsing
# (solar_ir/limits.py), which names the value.
MAX_INT_DIGITS = 64


@dataclass(frozen=True, slots=True)
class TensorType:
    shape: tuple[Dim, ...]
    dtype: DType

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)

    def concrete_shape(self, params: dict[str, int] | None = None) -> tuple[int, ...]:
        return tuple(d if isinstance(d, int) else evaluate_int(d, params or {}) for d in self.shape)

    def num_elements(self, params: dict[str, int] | None = None) -> int:
        n = 1
        for d in self.concrete_shape(params):
            n *= d
        return n

    def nbytes(self, params: dict[str, int] | None = None) -> int:
        return self.dtype.bytes_of(self.num_elements(params))

    def with_shape(self, shape: tuple[Dim, ...]) -> TensorType:
        return TensorType(tuple(canonical_dim(d) for d in shape), self.dtype)

    def with_dtype(self, dtype: DType) -> TensorType:
        return TensorType(self.shape, dtype)

    def __str__(self) -> str:
        dims = "".join(format_dim(d) + "x" for d in self.shape)
        return f"tensor<{dims}{self.dtype.spelling}>"


def format_dim(dim: Dim) -> str:
    if isinstance(dim, int):
        return str(dim)
    if isinstance(dim, NameRef):
        return dim.name
    return f"({format_expr(dim)})"


def canonical_dim(dim: Dim) -> Dim:
    """Constant expressions become ints, so that `(2*32)` and `64` are the same dimension."""
    if isinstance(dim, IntLit):
        return dim.value
    if isinstance(dim, Expr):
        form = linear_form(dim, atoms=True)
        if form is not None and not form[0]:
            return form[1]
        return _drop_zeros(dim)
    return dim


def _drop_zeros(e: Expr) -> Expr:
    """`x + 0`, `x - 0` and `0 + x` become `x`, so derived dimensions print as written."""
    if isinstance(e, Binary) and e.op in ("+", "-"):
        lhs, rhs = _drop_zeros(e.lhs), _drop_zeros(e.rhs)
        if isinstance(rhs, IntLit) and rhs.value == 0:
            return lhs
        if e.op == "+" and isinstance(lhs, IntLit) and lhs.value == 0:
            return rhs
        return Binary(e.op, lhs, rhs, e.loc)
    return e


def dims_equal(a: Dim, b: Dim) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if a == b:  # the same expression (the common case): equal forms, without building them
        return True
    ea = IntLit(a) if isinstance(a, int) else a
    eb = IntLit(b) if isinstance(b, int) else b
    # Non-linear parts (`N floordiv 2`) are compared as opaque terms of a linear combination.
    fa, fb = linear_form(ea, atoms=True), linear_form(eb, atoms=True)
    if fa is not None and fb is not None:
        return fa == fb
    return format_expr(ea) == format_expr(eb)


def shapes_equal(a: tuple[Dim, ...], b: tuple[Dim, ...]) -> bool:
    return len(a) == len(b) and all(dims_equal(x, y) for x, y in zip(a, b, strict=True))


def types_equal(a: TensorType, b: TensorType) -> bool:
    return a.dtype == b.dtype and shapes_equal(a.shape, b.shape)


class TypeSyntaxError(ValueError):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset  # column offset of the problem inside the type's text


@lru_cache(maxsize=4096)
def parse_tensor_type(text: str) -> TensorType:
    """Parses `tensor<...>`; raises TypeSyntaxError with the offset of the bad part."""
    body = text[len("tensor<"):-1]
    parts = _split_dims(body)
    *dim_parts, (dtype_offset, dtype_text) = parts
    dtype = dtype_from_name(dtype_text.strip())
    if dtype is None:
        raise TypeSyntaxError(f"unknown element type '{dtype_text.strip()}' in '{text}'", 7 + dtype_offset)
    shape: list[Dim] = []
    for offset, part in dim_parts:
        shape.append(_parse_dim(part.strip(), text, 7 + offset))
    return TensorType(tuple(shape), dtype)


def _split_dims(body: str) -> list[tuple[int, str]]:
    # An 'x' separates dimensions only outside parentheses; parameters are capitals so never contain 'x'.
    parts: list[tuple[int, str]] = []
    depth, start = 0, 0
    for pos, ch in enumerate(body):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "x" and depth == 0:
            parts.append((start, body[start:pos]))
            start = pos + 1
    parts.append((start, body[start:]))
    return parts


def _parse_dim(part: str, text: str, offset: int) -> Dim:
    if part.isdigit():
        if len(part.lstrip("0")) > MAX_INT_DIGITS:
            raise TypeSyntaxError(f"dimension of {len(part.lstrip('0'))} digits in a type is out of range: integers "
                                  "must fit in 64 bits", offset)
        value = int(part)
        return value  # 0 is a size: an empty tensor is a value (docs/ir.md, "Types")
    if PARAM_NAME.match(part):
        return _dim_expression(part)
    if part.startswith("(") and part.endswith(")"):
        try:
            return _dim_expression(part)
        except ValueError as err:
            raise TypeSyntaxError(f"bad dimension expression '{part}' in '{text}': {err}", offset) from None
    raise TypeSyntaxError(
        f"bad dimension '{part}' in '{text}': expected a non-negative integer, a size parameter in capitals "
        "(M, SEQ_LEN) or a parenthesized expression of them",
        offset,
    )


@lru_cache(maxsize=4096)
def _dim_expression(part: str) -> Dim:
    """A size parameter or a parenthesized dimension expression. One object per text: the types of a network
    repeat a few sizes (`(1 + (-1 + X_2) floordiv 4)` in a hundred types), and comparing them is then
    comparing one object with itself."""
    if PARAM_NAME.match(part):
        return NameRef(part)
    return canonical_dim(_DimParser(part[1:-1]).parse())


_DIM_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Z][A-Z0-9_]*)|(floordiv|ceildiv|mod)|([-+*()]))")


class _DimParser:
    """Precedence climbing over `+ - * floordiv ceildiv mod`, integers and parameters."""

    def __init__(self, text: str) -> None:
        self.tokens: list[str] = []
        pos = 0
        text = text.rstrip()
        while pos < len(text):
            m = _DIM_TOKEN.match(text, pos)
            if not m:
                raise ValueError(f"unexpected '{text[pos:].strip()}'")
            self.tokens.append(m.group(m.lastindex or 0))
            pos = m.end()
        self.pos = 0

    def parse(self) -> Expr:
        expr = self._sum()
        if self.pos != len(self.tokens):
            raise ValueError(f"unexpected '{self.tokens[self.pos]}'")
        return expr

    def _peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _sum(self) -> Expr:
        expr = self._product()
        while self._peek() in ("+", "-"):
            op = self.tokens[self.pos]
            self.pos += 1
            expr = Binary(op, expr, self._product())
        return expr

    def _product(self) -> Expr:
        expr = self._unary()
        while self._peek() in ("*", "floordiv", "ceildiv", "mod"):
            op = self.tokens[self.pos]
            self.pos += 1
            expr = Binary(op, expr, self._unary())
        return expr

    def _unary(self) -> Expr:
        tok = self._peek()
        if tok is None:
            raise ValueError("expression ends early")
        self.pos += 1
        if tok == "-":
            return negate(self._unary(), UNKNOWN)
        if tok == "(":
            expr = self._sum()
            if self._peek() != ")":
                raise ValueError("missing ')'")
            self.pos += 1
            return expr
        if tok.isdigit():
            if len(tok.lstrip("0")) > MAX_INT_DIGITS:
                raise ValueError(f"integer of {len(tok.lstrip('0'))} digits is out of range (64 bits)")
            return IntLit(int(tok))
        if PARAM_NAME.match(tok):
            return NameRef(tok)
        raise ValueError(f"unexpected '{tok}'")
