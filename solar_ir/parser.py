"""Text → IR. Lark's LALR parser runs with an embedded transformer (`parse_builder`), so IR objects are
built while parsing (no parse tree). SSA uses are linked to their definitions in a second, scoped walk
(`Resolver`) that reports every undefined or misplaced use at once (`resolve`). The hot loop is
`lalr.FastLALR`."""

from __future__ import annotations

import os
import re
from functools import cache
from typing import Any

import lark
from lark import Token

from .diagnostics import Diagnostic, DiagnosticEngine, DiagnosticError, Location
from .expr import Expr
from .grammar_tables import LARK_OPTIONS, grammar_text, load_shipped
from .lalr import Fallback, FastLALR
from .limits import check_limits
from .ops import OP_CLASSES, Assign, KernelOp, ModuleOp
from .parse_builder import ParseBuilder, SyntaxIssue, decode_string, unknown_operation
from .resolve import Resolver
from .source import strip_bom

__all__ = ["decode_string", "parse_expr_text", "parse_module"]


# ---- the parser object ----------------------------------------------------------------------------

_TERMINAL_NAMES = {
    "VALUE": "a value such as %x",
    "SYMBOL": "a symbol such as @name",
    "NAME": "a name",
    "INT": "an integer",
    "FLOAT": "a float",
    "STRING": "a string",
    "TENSOR_TYPE": "a tensor type such as tensor<4x4xf32>",
    "OP_NAME": "an operation",
    "CAST": "cast<type>",
    "CMP": "a comparison",
    "ASSIGN_OP": "'+=', '*=', 'max=' or 'min='",
    "$END": "the end of the input",
}


def _cache_path() -> str | bool:
    # Lark stores the LALR tables here, so a new process skips the grammar analysis (~0.3 s).
    base = os.environ.get("SOLAR_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "solar")
    try:
        os.makedirs(base, exist_ok=True)
    except OSError:
        return False
    return os.path.join(base, f"sir-grammar-lark{lark.__version__}.cache")


@cache
def _grammar_text() -> str:
    return grammar_text()


class _Parser:
    def __init__(self) -> None:
        self.builder = ParseBuilder()
        grammar = _grammar_text()
        shipped = load_shipped(grammar, self.builder)
        # Stale or missing shipped tables (an edited grammar, another Lark): build them, cached per user.
        self.lark = shipped or lark.Lark(grammar, transformer=self.builder, cache=_cache_path(), **LARK_OPTIONS)
        self.display = {t.name: self._display(t) for t in self.lark.terminals}
        self.fast = FastLALR.create(self.lark, "file")

    @staticmethod
    def _display(term: Any) -> str:
        if term.name in _TERMINAL_NAMES:
            return _TERMINAL_NAMES[term.name]
        if term.pattern.type == "str":
            return f"'{term.pattern.value}'"
        return term.name.lower()

    def parse(self, text: str, file: str) -> ModuleOp:
        self.builder.filename = file
        try:
            if self.fast is not None:
                try:
                    return self.fast.parse(text)
                except Fallback:
                    pass  # Lark's own parser below raises the exact error to report
            return self.lark.parse(text)
        except SyntaxIssue as issue:
            raise DiagnosticError([Diagnostic("error", str(issue), issue.loc)]) from None
        except lark.exceptions.UnexpectedInput as err:
            raise DiagnosticError([self._syntax_error(err, file, text)]) from None

    def _syntax_error(self, err: lark.exceptions.UnexpectedInput, file: str, text: str) -> Diagnostic:
        loc = Location(file, err.line if err.line > 0 else 1, err.column if err.column > 0 else 1)
        if isinstance(err, lark.exceptions.UnexpectedCharacters):
            return Diagnostic("error", f"unexpected character '{err.char}'", loc)
        expected = sorted({self.display.get(name, name) for name in getattr(err, "expected", ()) or ()})
        token = getattr(err, "token", None)
        if token is not None and token.type == "NAME" and str(token) in ("solar", "affine"):
            return Diagnostic("error", _operation_message(text, token), loc)
        found = "the end of the input" if token is None or token.type == "$END" else f"'{token}'"
        if len(expected) > 8:
            expected = [*expected[:8], "..."]
        message = f"expected {_or_list(expected)}, found {found}" if expected else f"unexpected {found}"
        hint = _hint(token, expected)
        return Diagnostic("error", message + hint, loc)


def _or_list(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " or " + items[-1]


# Ops without results of their own: a module, a function, the terminators and a call (which may have none).
_NOT_DEFINING = ("solar.module", "solar.func", "solar.call", "solar.return", "solar.yield")


def _operation_message(text: str, token: Token) -> str:
    """A dotted word where an operation cannot start: a known op in the wrong place, or an unknown op."""
    word = re.match(r"[A-Za-z_.]+", text[token.start_pos:])
    name = word.group(0) if word else str(token)
    if name in OP_CLASSES and name not in _NOT_DEFINING:
        return f"{name} defines values: write `%r = {name} ...`"
    if name in OP_CLASSES or name in ("affine.for", "affine.if"):
        return f"{name} cannot appear here"
    return unknown_operation(name)


def _hint(token: Any, expected: list[str]) -> str:
    if token is not None and token.type == "RBRACE" and expected == [_TERMINAL_NAMES["VALUE"]]:
        return " (solar.return and solar.yield take at least one value: SIR is pure)"
    ends_region = any("solar.return" in e or "solar.yield" in e for e in expected)
    if token is not None and token.type == "RBRACE" and ends_region:
        return " (a region must end with solar.return or solar.yield)"
    return ""


@cache
def _parser() -> _Parser:
    return _Parser()


def parse_module(text: str, file: str = "<stdin>", diagnostics: DiagnosticEngine | None = None,
                 first_line: int = 1) -> ModuleOp:
    """Parses SIR text. Syntax errors raise DiagnosticError; undefined values are reported to
    `diagnostics` (a DiagnosticError is raised if there is no engine to collect them)."""
    engine = diagnostics or DiagnosticEngine()
    text = strip_bom(text)
    engine.sources.add(file, text, first_line)
    padded = "\n" * (first_line - 1) + text if first_line > 1 else text
    try:
        module = _parser().parse(padded, file)
    except DiagnosticError as err:
        engine.diagnostics.extend(err.diagnostics)
        err.sources = engine.sources
        raise
    if not check_limits(module, engine):
        # Later stages (starting with name resolution) walk the IR recursively: stop here.
        raise DiagnosticError(engine.diagnostics, engine.sources)
    Resolver(engine).resolve_module(module)
    if diagnostics is None and engine.has_errors:
        raise DiagnosticError(engine.diagnostics, engine.sources)
    return module


def parse_expr_text(text: str) -> Expr:
    """Parses a single expression (for builders and tests)."""
    module = parse_module(
        "solar.func @e(%x: tensor<1xf32>) -> tensor<1xf32> { %y = solar.kernel @e(%x as X) -> (Y: tensor<1xf32>) "
        f"{{ Y[0] = {text} }} solar.return %y }}"
    )
    kernel = module.funcs[0].body[0]
    assert isinstance(kernel, KernelOp) and isinstance(kernel.body[0], Assign)
    return kernel.body[0].value
