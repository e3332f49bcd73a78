"""Extended einsum subscripts: `"nc(2p+r-1)(2q+s-1),kcrs->nkpq"` and where-clauses `"j<=i"`.

Each index is one letter; an entry is a letter or an affine window in parentheses. Entries parse to
expressions over `IndexRef(letter)`, so the affine machinery of `solar.ir.expr` applies to them unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .expr import Binary, Expr, IndexRef, IntLit, free_indices, negate
from .types import Dim

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z])|(->|<=|>=|==|[-+*(),<>]))")


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


class _Lexer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, int]] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if not m:
                bad = len(text) - len(text[pos:].lstrip())
                raise SpecError(f"unexpected character '{text[bad]}' in einsum subscripts", bad)
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


def parse_spec(text: str) -> EinsumSpec:
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
        if tok is not None and tok.isalpha():
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
        if nxt is not None and nxt.isalpha():
            lex.take()
            term = Binary("*", IntLit(coeff), IndexRef(nxt))
        else:
            term = IntLit(coeff)
    elif tok is not None and tok.isalpha():
        lex.take()
        term = IndexRef(tok)
    else:
        raise SpecError(f"expected an index letter or a number, found '{tok or 'the end'}'", start)
    return negate(term, term.loc) if negative else term


def parse_where(text: str) -> list[Binary]:
    """Comma-separated affine constraints such as `j<=i, i+j<8`."""
    lex = _Lexer(text)
    constraints: list[Binary] = []
    while True:
        lhs = _affine(lex)
        op = lex.peek()
        if op not in ("<", "<=", ">", ">=", "=="):
            raise SpecError(f"expected a comparison in the where-clause, found '{op or 'the end'}'", lex.offset())
        lex.take()
        constraints.append(Binary(op, lhs, _affine(lex)))
        if lex.peek() is None:
            return constraints
        lex.expect(",")


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
        if isinstance(c.lhs, IndexRef) and isinstance(c.rhs, IntLit) and c.lhs.name not in ranges:
            if c.op == "<" and c.rhs.value > 0:
                ranges[c.lhs.name] = c.rhs.value
            elif c.op == "<=" and c.rhs.value >= 0:
                ranges[c.lhs.name] = c.rhs.value + 1
    missing = [i for i in spec.indices if i not in ranges]
    if missing:
        raise SpecError(f"the range of index '{missing[0]}' is given neither by a dimension where it stands "
                        f"alone nor by a where-constraint such as \"{missing[0]}<3\"", 0)
    return ranges
