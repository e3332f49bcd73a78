"""IR → text, in the one canonical form (two-space indents, one statement per line)."""

from __future__ import annotations

from typing import Any

from .expr import format_expr, format_float
from .ops import (
    AffineFor,
    AffineIf,
    Assign,
    Binding,
    CallOp,
    ConstantOp,
    EinsumOp,
    ForOp,
    FuncOp,
    GenericOp,
    GroupOp,
    IfOp,
    InsertOp,
    KernelOp,
    KStmt,
    LocalDecl,
    ModuleOp,
    Op,
    ReturnOp,
    SliceEntry,
    SliceOp,
    SymbolRef,
    TensorDecl,
    Value,
    Word,
    YieldOp,
)
from .types import TensorType


def print_module(module: ModuleOp) -> str:
    return Printer().module(module)


def print_op(op: Op, indent: int = 0) -> str:
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


def _types(types: list[TensorType]) -> str:
    if len(types) == 1:
        return str(types[0])
    return "(" + ", ".join(str(t) for t in types) + ")"


def _values(values: list[Value]) -> str:
    return ", ".join("%" + v.name for v in values)


def _bindings(bindings: list[Binding]) -> str:
    return ", ".join(f"%{b.value.name} as {b.name}" for b in bindings)


def _decls(decls: list[TensorDecl]) -> str:
    return ", ".join(f"{d.name}: {d.type}" for d in decls)


def _slice(entries: list[SliceEntry]) -> str:
    parts = []
    for e in entries:
        if e.index is not None:
            parts.append(format_expr(e.index))
            continue
        text = (format_expr(e.start) if e.start is not None else "") + ":"
        text += format_expr(e.stop) if e.stop is not None else ""
        if e.step is not None:
            text += ":" + format_expr(e.step)
        parts.append(text)
    return "[" + ", ".join(parts) + "]"


def _attrs_clause(op: Op) -> str:
    return f" attributes {format_attr_dict(op.attrs)}" if op.attrs else ""


def _src_loc(op: Op) -> str:
    loc = op.src_loc
    return f" loc({format_string(loc.file)}:{loc.line}:{loc.col})" if loc is not None else ""


class Printer:
    def __init__(self) -> None:
        self.out: list[str] = []

    def module(self, module: ModuleOp) -> str:
        head = "solar.module"
        if module.name is not None:
            head += " @" + module.name
        if module.params:
            head += " [" + ", ".join(p.name if p.default is None else f"{p.name} = {p.default}"
                                     for p in module.params) + "]"
        self.out.append(head + _attrs_clause(module) + " {\n")
        for i, func in enumerate(module.funcs):
            if i:
                self.out.append("\n")
            self.func(func, 1)
        self.out.append("}" + _src_loc(module) + "\n")
        return "".join(self.out)

    def func(self, func: FuncOp, indent: int) -> None:
        pad = "  " * indent
        args = ", ".join(f"%{a.name}: {a.type}" for a in func.args)
        results = ""
        if func.result_types:
            results = " -> " + _types(func.result_types)
        self.out.append(f"{pad}solar.func @{func.name}({args}){results}{_attrs_clause(func)} {{\n")
        self.block(func.body, indent + 1)
        self.out.append(f"{pad}}}{_src_loc(func)}\n")

    def block(self, ops: list[Op], indent: int) -> None:
        for op in ops:
            self.op(op, indent)

    def op(self, op: Op, indent: int) -> None:
        pad = "  " * indent
        lhs = _values(op.results) + " = " if op.results else ""
        out = self.out
        if isinstance(op, KernelOp):
            out.append(f"{pad}{lhs}solar.kernel @{op.symbol}({_bindings(op.inputs)}) -> ({_decls(op.outputs)})"
                       f"{_attrs_clause(op)} {{\n")
            self.kstmts(op.body, indent + 1)
            out.append(f"{pad}}}{_src_loc(op)}\n")
        elif isinstance(op, EinsumOp):
            where = f" where {format_string(op.where)}" if op.where is not None else ""
            out.append(f"{pad}{lhs}solar.einsum @{op.symbol} {format_string(op.spec)}{where} ({_bindings(op.inputs)})"
                       f" -> ({_decls(op.outputs)}){_attrs_clause(op)} {{\n")
            for s in op.body:
                out.append(f"{pad}  {s.target} {s.op} {format_expr(s.value)}\n")
            out.append(f"{pad}}}{_src_loc(op)}\n")
        elif isinstance(op, GroupOp):
            types = f" -> {_types(op.result_types)}" if op.result_types else ""
            out.append(f"{pad}{lhs}solar.group @{op.symbol}{types}{_attrs_clause(op)} {{\n")
            self.block(op.body, indent + 1)
            out.append(f"{pad}}}{_src_loc(op)}\n")
        elif isinstance(op, ForOp):
            iters = ""
            if op.iter_args:
                iters = " iter_args(" + ", ".join(
                    f"%{a.name} = %{i.name}" for a, i in zip(op.iter_args, op.inits, strict=True)) + ")"
            types = f" -> {_types(op.result_types)}" if op.result_types else ""
            out.append(f"{pad}{lhs}solar.for %{op.var} = {format_expr(op.lower)} to {format_expr(op.upper)}"
                       f"{iters}{types}{_attrs_clause(op)} {{\n")
            self.block(op.body, indent + 1)
            out.append(f"{pad}}}{_src_loc(op)}\n")
        elif isinstance(op, IfOp):
            types = f" -> {_types(op.result_types)}" if op.result_types else ""
            out.append(f"{pad}{lhs}solar.if %{op.cond.name}{types}{_attrs_clause(op)} {{\n")
            self.block(op.then_body, indent + 1)
            if op.else_body:
                out.append(f"{pad}}} else {{\n")
                self.block(op.else_body, indent + 1)
            out.append(f"{pad}}}{_src_loc(op)}\n")
        elif isinstance(op, CallOp):
            types = f" : {_types(op.result_types)}" if op.result_types else ""
            out.append(f"{pad}{lhs}solar.call @{op.callee}({_values(op.args)}){types}{_src_loc(op)}\n")
        elif isinstance(op, ReturnOp | YieldOp):
            out.append(f"{pad}{op.opname} {_values(op.values)}{_src_loc(op)}\n")
        elif isinstance(op, ConstantOp):
            out.append(f"{pad}{lhs}solar.constant {format_attr_value(op.value)} : {op.type}{_src_loc(op)}\n")
        elif isinstance(op, SliceOp):
            out.append(f"{pad}{lhs}solar.slice %{op.source.name}{_slice(op.entries)} : {op.type}{_src_loc(op)}\n")
        elif isinstance(op, InsertOp):
            out.append(f"{pad}{lhs}solar.insert %{op.value.name} into %{op.dest.name}{_slice(op.entries)}"
                       f" : {op.type}{_src_loc(op)}\n")
        elif isinstance(op, GenericOp):
            args = " " + _values(op.args) if op.args else ""
            attrs = " " + format_attr_dict(op.attrs) if op.attrs else ""
            out.append(f"{pad}{lhs}{op.opname}{args}{attrs} : {_types(op.result_types)}{_src_loc(op)}\n")
        else:
            raise TypeError(f"cannot print {op!r}")

    def kstmts(self, body: list[KStmt], indent: int) -> None:
        pad = "  " * indent
        out = self.out
        for s in body:
            if isinstance(s, Assign):
                out.append(f"{pad}{format_expr(s.target)} {s.op} {format_expr(s.value)}\n")
            elif isinstance(s, AffineFor):
                step = f" step {s.step}" if s.step != 1 else ""
                out.append(f"{pad}affine.for %{s.var} = {format_expr(s.lower)} to {format_expr(s.upper)}{step} {{\n")
                self.kstmts(s.body, indent + 1)
                out.append(f"{pad}}}\n")
            elif isinstance(s, AffineIf):
                out.append(f"{pad}affine.if {format_expr(s.cond)} {{\n")
                self.kstmts(s.body, indent + 1)
                out.append(f"{pad}}}\n")
            elif isinstance(s, LocalDecl):
                out.append(f"{pad}local {s.decl.name}: {s.decl.type}\n")
            else:
                raise TypeError(f"cannot print {s!r}")
