"""Extended einsum subscripts: `"nc(2p+r-1)(2q+s-1),kcrs->nkpq"` and where-clauses `"j<=i"`, `"j<=CONTEXT"`.

Each index is one letter; an entry is a letter or an affine window in parentheses. Entries parse to
expressions over `IndexRef(letter)`, so the affine machinery of `solar.ir.expr` applies to them unchanged.
A where-clause may also name the module's size parameters (`i+W>j`): a name that is not an index of the
einsum is a size parameter and parses to `NameRef(name)`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

from .expr import (
    Binary,
    Expr,
    IndexRef,
    IntLit,
    NameRef,
    free_indices,
    free_names,
    linear_form,
    negate,
    substitute_names,
)
from .types import Dim, canonical_dim

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z])|(->|<=|>=|==|[-+*(),<>]))")
# Where-clauses name size parameters too: a name is a letter or underscore, then letters, digits, underscores.
_WHERE_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(<=|>=|==|[-+*(),<>]))")
_COMPARISONS = ("<", "<=", ">", ">=", "==")
_Resolver = Callable[[str, int], Expr]  # a name and its offset to the expression it stands for


class SpecError(ValueError):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset  # position inside the string


@dataclass(frozen=True, slots=True)
class EinsumSpec:
    inputs: tuple[tuple[Expr, ...], ...]
    output: tuple[Expr, ...]
    indices: tuple[str, ...]  # in order of first appearance

    @property
    def reduced(self) -> tuple[str, ...]:
        """Indices that do not appear in the result (summed, maxed, ... over)."""
        out = {r.name for e in self.output for r in _refs(e)}
        return tuple(i for i in self.indices if i not in out)


def _refs(expr: Expr) -> list[IndexRef]:
    return list(free_indices(expr))


def _is_name(tok: str | None) -> bool:
    return tok is not None and (tok[0].isalpha() or tok[0] == "_")


class _Lexer:
    def __init__(self, text: str, pattern: re.Pattern[str] = _TOKEN,
                 resolve: _Resolver | None = None) -> None:
        self.text = text
        self.tokens: list[tuple[str, int]] = []
        # A name to its expression (an index or a size parameter); subscripts: every letter is an index.
        self.resolve: _Resolver = resolve or (lambda name, _offset: IndexRef(name))
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = pattern.match(text, pos)
            if not m:
                bad = len(text) - len(text[pos:].lstrip())
                what = "einsum subscripts" if pattern is _TOKEN else "the where-clause"
                raise SpecError(f"unexpected character '{text[bad]}' in {what}", bad)
            self.tokens.append((m.group(m.lastindex or 0), m.start(m.lastindex or 0)))
            pos = m.end()
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos][0] if self.pos < len(self.tokens) else None

    def offset(self) -> int:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else len(self.text)

    def take(self) -> str:
        tok = self.tokens[self.pos][0]
        self.pos += 1
        return tok

    def expect(self, tok: str) -> None:
        if self.peek() != tok:
            found = self.peek() or "the end"
            raise SpecError(f"expected '{tok}' in einsum subscripts, found '{found}'", self.offset())
        self.pos += 1


@functools.lru_cache(maxsize=8192)
def parse_spec(text: str) -> EinsumSpec:
    """The subscripts parsed (immutable, so one parse per distinct text serves every analysis asking: a
    network's passes asked 14,000 times for a few hundred texts)."""
    lex = _Lexer(text)
    terms: list[tuple[Expr, ...]] = [_term(lex)]
    while lex.peek() == ",":
        lex.take()
        terms.append(_term(lex))
    lex.expect("->")
    output = _term(lex)
    if lex.peek() is not None:
        raise SpecError(f"unexpected '{lex.peek()}' after the result subscripts", lex.offset())
    seen: dict[str, None] = {}
    for entry in (e for t in [*terms, output] for e in t):
        for ref in _refs(entry):
            seen.setdefault(ref.name)
    return EinsumSpec(tuple(terms), output, tuple(seen))


def _term(lex: _Lexer) -> tuple[Expr, ...]:
    entries: list[Expr] = []
    while True:
        tok = lex.peek()
        if _is_name(tok):
            lex.take()
            entries.append(IndexRef(tok))
        elif tok == "(":
            lex.take()
            entries.append(_affine(lex))
            lex.expect(")")
        else:
            return tuple(entries)


def _affine(lex: _Lexer) -> Expr:
    expr = _signed_term(lex, first=True)
    while lex.peek() in ("+", "-"):
        op = lex.take()
        expr = Binary(op, expr, _signed_term(lex, first=False))
    return expr


def _signed_term(lex: _Lexer, first: bool) -> Expr:
    negative = False
    if first and lex.peek() == "-":
        lex.take()
        negative = True
    tok = lex.peek()
    start = lex.offset()
    term: Expr
    if tok is not None and tok.isdigit():
        coeff = int(lex.take())
        if lex.peek() == "*":
            lex.take()
        nxt = lex.peek()
        if _is_name(nxt):
            at = lex.offset()
            term = Binary("*", IntLit(coeff), lex.resolve(lex.take(), at))
        else:
            term = IntLit(coeff)
    elif _is_name(tok):
        lex.take()
        term = lex.resolve(tok, start)
    else:
        raise SpecError(f"expected an index letter or a number, found '{tok or 'the end'}'", start)
    return negate(term, term.loc) if negative else term


def parse_where(text: str, indices: Collection[str] | None = None, sizes: Collection[str] | None = None
                ) -> list[Binary]:
    """Comma-separated affine constraints such as `j<=i, i+j<8, j<=CONTEXT`. A name among `indices` (the
    einsum's letters) is an index; any other name is a size parameter. Without `indices`, single letters are
    indices. With `sizes`, a size parameter outside it is a SpecError at its offset."""

    def resolve(name: str, offset: int) -> Expr:
        if name in indices if indices is not None else len(name) == 1:
            return IndexRef(name)
        if sizes is not None and name not in sizes:
            if len(name) == 1:
                raise SpecError(f"where-clause index '{name}' is not an index of the einsum (nor a size "
                                "parameter of the module)", offset)
            raise SpecError(f"where-clause name '{name}' is neither an index of the einsum nor a size parameter "
                            "of the module", offset)
        return NameRef(name)

    lex = _Lexer(text, _WHERE_TOKEN, resolve)
    constraints: list[Binary] = []
    while True:
        lhs = _affine(lex)
        op = lex.peek()
        if op not in _COMPARISONS:
            raise SpecError(f"expected a comparison in the where-clause, found '{op or 'the end'}'", lex.offset())
        lex.take()
        constraints.append(Binary(op, lhs, _affine(lex)))
        if lex.peek() is None:
            return constraints
        lex.expect(",")


def where_sizes(constraints: list[Binary]) -> set[str]:
    """The size parameters a where-clause names."""
    return {n.name for c in constraints for n in free_names(c)}


def format_where(constraints: list[Binary]) -> str:
    """Constraints as where-clause text (`j<=i,i<=j+2,j<=CONTEXT`), which `parse_where` reads back."""
    return ",".join(f"{_affine_text(c.lhs)}{c.op}{_affine_text(c.rhs)}" for c in constraints)


def _affine_text(expr: Expr) -> str:
    form = linear_form(expr)
    if form is None:
        raise ValueError(f"a where-clause side must be affine, not {expr!r}")
    return affine_subscript(*form, lambda name: name[1:] if name.startswith("%") else None)


def affine_subscript(coeffs: Iterable[tuple[str, int]], const: int, letter_of: Callable[[str], str | None]) -> str:
    """A linear form (`linear_form`'s terms and constant) in subscript notation, `2p+r-1` or `i+2*W`:
    `letter_of` gives a name's index letter, or None for a size parameter (which is written `2*W`)."""
    text = ""
    for name, c in sorted(coeffs, key=lambda nc: nc[1] < 0):  # `k-j`, not `-j+k`
        sign = "-" if c < 0 else ("+" if text else "")
        mag = abs(c)
        letter = letter_of(name)
        if letter is not None:  # an index letter: `2p`
            text += f"{sign}{mag if mag != 1 else ''}{letter}"
        else:  # a size parameter: `2*W`
            text += f"{sign}{f'{mag}*' if mag != 1 else ''}{name}"
    if const > 0:
        text += ("+" if text else "") + str(const)
    elif const < 0 or not text:
        text += str(const)
    return text


def bind_where(text: str, indices: Collection[str], values: Mapping[str, int]) -> str:
    """A where-clause with the size parameters of `values` replaced by their values."""
    constraints = parse_where(text, indices)
    if not where_sizes(constraints) & set(values):
        return text
    literal = {k: IntLit(v) for k, v in values.items()}
    return format_where([Binary(c.op, substitute_names(c.lhs, literal), substitute_names(c.rhs, literal))
                         for c in constraints])


def index_ranges(spec: EinsumSpec, shapes: list[tuple[Dim, ...]], where: list[Binary] | None = None
                 ) -> dict[str, Dim]:
    """The extent of every index: from a dimension (of an operand or the result; `shapes` lists the
    operands' then the result's) in which the index stands alone, else from a where-constraint `r < 3`
    or `r <= 2` (a pooling window). Raises SpecError naming an index whose range nothing gives."""
    ranges: dict[str, Dim] = {}
    for term, shape in zip([*spec.inputs, spec.output], shapes, strict=True):
        for entry, dim in zip(term, shape, strict=False):
            if isinstance(entry, IndexRef) and entry.name not in ranges:
                ranges[entry.name] = dim
    for c in where or []:
        if not isinstance(c.lhs, IndexRef) or c.lhs.name in ranges:
            continue
        if isinstance(c.rhs, IntLit):
            if c.op == "<" and c.rhs.value > 0:
                ranges[c.lhs.name] = c.rhs.value
            elif c.op == "<=" and c.rhs.value >= 0:
                ranges[c.lhs.name] = c.rhs.value + 1
        elif c.op in ("<", "<=") and not any(True for _ in free_indices(c.rhs)):
            # A bound in the size parameters (`j<=CONTEXT`): the extent is a dimension expression.
            top = c.rhs if c.op == "<" else Binary("+", c.rhs, IntLit(1))
            ranges[c.lhs.name] = canonical_dim(top)
    missing = [i for i in spec.indices if i not in ranges]
    if missing:
        raise SpecError(f"the range of index '{missing[0]}' is given neither by a dimension where it stands "
                        f"alone nor by a where-constraint such as \"{missing[0]}<3\"", 0)
    return ranges
