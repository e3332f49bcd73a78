"""IR → text, in the one canonical form (two-space indents, one statement per line). Each op prints itself
(`Op.print`); this module holds the printer they write to and the spellings they share. It sits below the
ops, which call it, and sees them through the protocol `Printable`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from .attr_values import SymbolRef, Word
from .diagnostics import Location
from .expr import format_float
from .types import TensorType


class Named(Protocol):
    """A value as the printer spells it: `%name`."""

    @property
    def name(self) -> str: ...


class Printable(Protocol):
    """What the printer needs of an op (every `solar.ir.ops.Op` is one): the values it names, its attributes,
    the source it was translated from, and its own printing."""

    @property
    def results(self) -> Sequence[Named]: ...

    @property
    def attrs(self) -> dict[str, Any]: ...

    @property
    def src_loc(self) -> Location | None: ...

    def print(self, p: Printer, indent: int) -> None: ...


def print_module(module: Printable) -> str:
    """The text of a module (a `solar.ir.ops.ModuleOp`)."""
    printer = Printer()
    module.print(printer, 0)
    return "".join(printer.out)


def print_op(op: Printable, indent: int = 0) -> str:
    printer = Printer()
    printer.op(op, indent)
    return "".join(printer.out)


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def format_string(text: str) -> str:
    """A string literal: quotes, backslashes and control characters are escaped (`\\n`, `\\x00`)."""
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def format_attr_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, str):
        return format_string(value)
    if isinstance(value, Word):
        return value.name
    if isinstance(value, SymbolRef):
        return "@" + value.name
    if isinstance(value, TensorType):
        return str(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(format_attr_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return format_attr_dict(value)
    raise TypeError(f"cannot print attribute value {value!r}")


def format_attr_dict(attrs: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k} = {format_attr_value(v)}" for k, v in attrs.items()) + "}"


def format_types(types: list[TensorType]) -> str:
    """One type bare, several in parentheses."""
    if len(types) == 1:
        return str(types[0])
    return "(" + ", ".join(str(t) for t in types) + ")"


def format_values(values: Sequence[Named]) -> str:
    return ", ".join("%" + v.name for v in values)


class Printer:
    """The text printed so far (`out`) and what every op's `print` uses to write itself."""

    def __init__(self) -> None:
        self.out: list[str] = []

    def op(self, op: Printable, indent: int) -> None:
        op.print(self, indent)

    def block(self, ops: Sequence[Printable], indent: int) -> None:
        for op in ops:
            op.print(self, indent)

    @staticmethod
    def lhs(op: Printable) -> str:
        """`%a, %b = ` naming the op's results, or nothing."""
        return format_values(op.results) + " = " if op.results else ""

    @staticmethod
    def attrs_clause(op: Printable) -> str:
        """` attributes {...}` for ops with regions, or nothing."""
        return f" attributes {format_attr_dict(op.attrs)}" if op.attrs else ""

    @staticmethod
    def src_loc(op: Printable) -> str:
        """` loc("file":line:col)` where the op was translated from other source, or nothing."""
        loc = op.src_loc
        return f" loc({format_string(loc.file)}:{loc.line}:{loc.col})" if loc is not None else ""
