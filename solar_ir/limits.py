"""The limits of what SIR text may hold, checked right after parsing (docs/errors.md).

The parser itself is an LALR loop and builds the IR without recursion, but the stages after it (name
resolution, verification, printing, the ISL model, fusion, costing) walk expressions and regions recursively.
Rather than let a deep input hit Python's recursion limit somewhere in them, nesting is bounded here, far
above what a program needs (kernels nest a handful of loops; frontends emit expressions of tens of terms),
with a diagnostic naming the limit. Integers must fit in 64 bits: ISL and the Numba backend take them as
`long` / int64, and one past that would verify, then fail deep inside either.

This walk is itself iterative, so it answers on inputs of any depth.
"""

from __future__ import annotations

from typing import Any

from .diagnostics import DiagnosticEngine, Location
from .expr import Expr, IntLit
from .ops import (
    AffineFor,
    AffineIf,
    Assign,
    ConstantOp,
    EinsumOp,
    ForOp,
    FuncOp,
    InsertOp,
    KernelOp,
    KStmt,
    LocalDecl,
    ModuleOp,
    Op,
    SliceOp,
)
from .types import TensorType

MAX_EXPR_DEPTH = 256  # operators nested in one expression (a chain of N additions nests N deep)
MAX_LOOP_DEPTH = 64  # affine.for / affine.if statements nested in one kernel
MAX_REGION_DEPTH = 64  # solar.for / solar.if / solar.group ops nested in one function
MAX_LITERAL_DEPTH = 64  # lists nested in an attribute or a solar.constant
INT_MIN, INT_MAX = -(2**63), 2**63 - 1


class _Checker:
    def __init__(self, engine: DiagnosticEngine) -> None:
        self.engine = engine
        self.ok = True
        self.fine_types: dict[int, TensorType] = {}  # types checked without an error (kept alive: ids stay theirs)

    def error(self, message: str, loc: Location) -> None:
        self.engine.error(message, loc)
        self.ok = False

    # ---- numbers ------------------------------------------------------------------------------------
    def integer(self, value: int, loc: Location, what: str = "integer") -> None:
        if not INT_MIN <= value <= INT_MAX:
            self.error(f"{what} {value} is out of range: SIR integers are 64-bit ({INT_MIN} to {INT_MAX})", loc)

    def expr(self, root: Expr | None, loc: Location | None = None) -> None:
        if root is None:
            return
        stack: list[tuple[Expr, int]] = [(root, 1)]
        while stack:
            e, depth = stack.pop()
            if depth > MAX_EXPR_DEPTH:
                self.error(f"expression nested more than {MAX_EXPR_DEPTH} deep (the limit; split it with local "
                           "tensors)", getattr(root, "loc", None) or loc or e.loc)
                return
            if isinstance(e, IntLit) and not isinstance(e.value, bool):
                self.integer(e.value, e.loc)
            stack.extend((c, depth + 1) for c in e.children())

    def type(self, t: TensorType | None, loc: Location) -> None:
        if t is None or id(t) in self.fine_types:
            return
        ok, self.ok = self.ok, True
        for d in t.shape:
            if isinstance(d, int):
                self.integer(d, loc, "dimension")
            else:
                self.expr(d, loc)
        if self.ok:  # the parser shares one object per type text: a network repeats a few hundred types
            self.fine_types[id(t)] = t
        self.ok = ok and self.ok

    def literal(self, value: Any, loc: Location, what: str, depth: int = 0) -> None:
        """Attribute values and constants: nested lists and dicts, bounded in depth, integers in range.
        `depth` is that of `value` itself (an op's attribute dictionary is 0, a constant's outer list 1)."""
        stack: list[tuple[Any, int]] = [(value, depth)]
        while stack:
            v, depth = stack.pop()
            if isinstance(v, list | tuple | dict):
                if depth > MAX_LITERAL_DEPTH:
                    self.error(f"{what} nests lists more than {MAX_LITERAL_DEPTH} deep (the limit)", loc)
                    return
                stack.extend((x, depth + 1) for x in (v.values() if isinstance(v, dict) else v))
            elif isinstance(v, bool):
                continue
            elif isinstance(v, int):
                self.integer(v, loc)
            elif isinstance(v, TensorType):
                self.type(v, loc)

    # ---- kernel bodies ------------------------------------------------------------------------------
    def statements(self, body: list[KStmt], owner: Op) -> None:
        stack: list[tuple[KStmt, int]] = [(s, 1) for s in body]
        while stack:
            s, depth = stack.pop()
            if isinstance(s, AffineFor | AffineIf):
                if depth > MAX_LOOP_DEPTH:
                    self.error(f"loops and conditions nested more than {MAX_LOOP_DEPTH} deep in kernel "
                               f"@{getattr(owner, 'symbol', '?')} (the limit)", s.loc)
                    return
                if isinstance(s, AffineFor):
                    self.expr(s.lower)
                    self.expr(s.upper)
                    self.integer(s.step, s.loc, "loop step")
                else:
                    self.expr(s.cond)
                stack.extend((c, depth + 1) for c in s.body)
            elif isinstance(s, Assign):
                self.expr(s.target)
                self.expr(s.value)
            elif isinstance(s, LocalDecl):
                self.type(s.decl.type, s.loc)

    # ---- ops ----------------------------------------------------------------------------------------
    def op(self, op: Op) -> None:
        if op.attrs:
            self.literal(op.attrs, op.loc, "an attribute")
        for r in op.results:
            self.type(r.type, r.loc)
        if isinstance(op, KernelOp):
            for d in op.outputs:
                self.type(d.type, d.loc)
            self.statements(op.body, op)
        elif isinstance(op, EinsumOp):
            for d in op.outputs:
                self.type(d.type, d.loc)
            for st in op.body:
                self.expr(st.value, st.loc)
        elif isinstance(op, ForOp):
            self.expr(op.lower, op.loc)
            self.expr(op.upper, op.loc)
        elif isinstance(op, SliceOp | InsertOp):
            for entry in op.entries:
                for e in (entry.index, entry.start, entry.stop, entry.step):
                    self.expr(e, entry.loc)
            self.type(op.type, op.loc)
        elif isinstance(op, ConstantOp):
            self.literal(op.value, op.loc, "the constant", depth=1)
            self.type(op.type, op.loc)
        elif isinstance(op, FuncOp):
            for a in op.args:
                self.type(a.type, a.loc)

    def module(self, module: ModuleOp) -> None:
        for p in module.params:
            if p.default is not None:
                self.integer(p.default, p.loc, f"size parameter {p.name} =")
        if module.attrs:
            self.literal(module.attrs, module.loc, "an attribute")
        stack: list[tuple[Op, int]] = [(f, 0) for f in reversed(module.funcs)]
        while stack:
            op, depth = stack.pop()
            if depth > MAX_REGION_DEPTH:
                self.error(f"regions (solar.for, solar.if, solar.group) nested more than {MAX_REGION_DEPTH} deep "
                           "(the limit)", op.loc)
                continue
            self.op(op)
            inner = depth if isinstance(op, FuncOp) else depth + 1
            for region in reversed(op.regions):
                stack.extend((o, inner) for o in reversed(region))


def check_limits(module: ModuleOp, engine: DiagnosticEngine) -> bool:
    """Reports every integer out of range and every nesting beyond a limit; True when there is none."""
    checker = _Checker(engine)
    checker.module(module)
    return checker.ok


__all__ = ["INT_MAX", "INT_MIN", "MAX_EXPR_DEPTH", "MAX_LITERAL_DEPTH", "MAX_LOOP_DEPTH", "MAX_REGION_DEPTH",
           "check_limits"]
