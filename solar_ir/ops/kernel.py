"""`solar.kernel`: an affine loop nest (`KStmt`s) over tensors bound by name. Its statements, their
printing and the kernel's verification live here."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..diagnostics import UNKNOWN, Location, note
from ..dtypes import DType
from ..expr import COMPARISONS, Access, Binary, Call, Expr, format_expr
from ..printer import Printer
from ..types import TensorType
from ..verify_base import RESERVED_WORDS, EType, KernelScope, literal_fits
from .base import ExprFn, Op, TypeFn, Value

if TYPE_CHECKING:
    from ..verifier import Verifier


@dataclass(slots=True)
class Binding:
    """`%x as X`: an SSA value read inside a kernel or einsum under a tensor name."""

    value: Value
    name: str
    loc: Location = UNKNOWN


@dataclass(slots=True)
class TensorDecl:
    """A named tensor of a kernel: an output (`-> (Y: type)`) or a `local`."""

    name: str
    type: TensorType
    loc: Location = UNKNOWN


def format_bindings(bindings: list[Binding]) -> str:
    return ", ".join(f"%{b.value.name} as {b.name}" for b in bindings)


def format_decls(decls: list[TensorDecl]) -> str:
    return ", ".join(f"{d.name}: {d.type}" for d in decls)


class KStmt:
    """A statement of a kernel body; each kind prints itself and maps its expressions."""

    __slots__ = ("loc",)

    def print(self, p: Printer, indent: int) -> None:
        raise TypeError(f"cannot print {self!r}")

    def map_exprs(self, fn: ExprFn) -> None:
        pass


class LocalDecl(KStmt):
    __slots__ = ("decl",)

    def __init__(self, decl: TensorDecl, loc: Location = UNKNOWN) -> None:
        self.decl = decl
        self.loc = loc

    def print(self, p: Printer, indent: int) -> None:
        p.out.append(f"{'  ' * indent}local {self.decl.name}: {self.decl.type}\n")


class AffineFor(KStmt):
    __slots__ = ("body", "lower", "step", "upper", "var")

    def __init__(self, var: str, lower: Expr, upper: Expr, step: int = 1, body: list[KStmt] | None = None,
                 loc: Location = UNKNOWN) -> None:
        self.var = var  # without '%'
        self.lower = lower
        self.upper = upper  # exclusive
        self.step = step
        self.body: list[KStmt] = body if body is not None else []
        self.loc = loc

    def print(self, p: Printer, indent: int) -> None:
        pad = "  " * indent
        step = f" step {self.step}" if self.step != 1 else ""
        p.out.append(f"{pad}affine.for %{self.var} = {format_expr(self.lower)} to {format_expr(self.upper)}{step} {{\n")
        print_kstmts(p, self.body, indent + 1)
        p.out.append(f"{pad}}}\n")

    def map_exprs(self, fn: ExprFn) -> None:
        self.lower, self.upper = fn(self.lower), fn(self.upper)
        for s in self.body:
            s.map_exprs(fn)


class AffineIf(KStmt):
    __slots__ = ("body", "cond")

    def __init__(self, cond: Expr, body: list[KStmt] | None = None, loc: Location = UNKNOWN) -> None:
        self.cond = cond
        self.body: list[KStmt] = body if body is not None else []
        self.loc = loc

    def print(self, p: Printer, indent: int) -> None:
        pad = "  " * indent
        p.out.append(f"{pad}affine.if {format_expr(self.cond)} {{\n")
        print_kstmts(p, self.body, indent + 1)
        p.out.append(f"{pad}}}\n")

    def map_exprs(self, fn: ExprFn) -> None:
        self.cond = fn(self.cond)
        for s in self.body:
            s.map_exprs(fn)


REDUCTIONS: dict[str, str] = {"+=": "add", "*=": "mul", "max=": "max", "min=": "min"}


class Assign(KStmt):
    """`T[idx] = value` (op '=') or a reduction `T[idx] += value` (op '+=', '*=', 'max=', 'min=')."""

    __slots__ = ("op", "target", "value")

    def __init__(self, target: Access, op: str, value: Expr, loc: Location | None = None) -> None:
        self.target = target
        self.op = op
        self.value = value
        self.loc = target.loc if loc is None else loc

    @property
    def reduction(self) -> str | None:
        """'add', 'mul', 'max', 'min' or None for a plain store."""
        return REDUCTIONS.get(self.op)

    def print(self, p: Printer, indent: int) -> None:
        p.out.append(f"{'  ' * indent}{format_expr(self.target)} {self.op} {format_expr(self.value)}\n")

    def map_exprs(self, fn: ExprFn) -> None:
        target = fn(self.target)
        assert isinstance(target, Access), "an assignment target must stay a tensor access"
        self.target = target
        self.value = fn(self.value)


def print_kstmts(p: Printer, body: list[KStmt], indent: int) -> None:
    for s in body:
        s.print(p, indent)


def walk_stmts(body: list[KStmt]) -> Iterator[KStmt]:
    for stmt in body:
        yield stmt
        if isinstance(stmt, AffineFor | AffineIf):
            yield from walk_stmts(stmt.body)


def check_store(v: Verifier, value_type: EType, target: DType, value: Expr) -> None:
    """A value of `value_type` may be stored in a tensor of `target` (a literal takes the tensor's type)."""
    if value_type is None or value_type == target:
        return
    if isinstance(value_type, str):
        if literal_fits(value_type, target):
            return
        v.error(f"a {value_type} cannot be stored in an {target} tensor", value.loc)
        return
    v.error(f"value of type {value_type} stored in a tensor of {target}; convert with "
            f"cast<{target}>(...)", value.loc)


class BoundOp(Op):
    """An op whose operands are bound to names (`%x as X`) and whose results are declared tensors: kernels
    and einsums."""

    __slots__ = ()
    inputs: list[Binding]
    outputs: list[TensorDecl]

    @property
    def operands(self) -> list[Value]:
        return [b.value for b in self.inputs]

    def set_operand(self, k: int, value: Value) -> None:
        self.inputs[k].value = value

    def declared_types(self) -> list[TensorType]:
        return [d.type for d in self.outputs]


class KernelOp(BoundOp):
    opname = "solar.kernel"
    __slots__ = ("body", "inputs", "outputs", "symbol")

    def __init__(self, symbol: str, inputs: list[Binding], outputs: list[TensorDecl], body: list[KStmt] | None = None,
                 loc: Location = UNKNOWN) -> None:
        super().__init__(loc)
        self.symbol = symbol
        self.inputs = inputs
        self.outputs = outputs
        self.body: list[KStmt] = body if body is not None else []

    def locals(self) -> list[TensorDecl]:
        return [s.decl for s in walk_stmts(self.body) if isinstance(s, LocalDecl)]

    def tensors(self) -> dict[str, TensorType]:
        """Every tensor name visible in the body with its type: inputs, outputs and locals."""
        named: dict[str, TensorType] = {}
        for b in self.inputs:
            if b.value.type is not None:
                named[b.name] = b.value.type
        for d in self.outputs:
            named[d.name] = d.type
        for d in self.locals():
            named[d.name] = d.type
        return named

    def map_types(self, fn: TypeFn) -> None:
        for d in self.outputs:
            d.type = fn(d.type)
        for s in walk_stmts(self.body):
            if isinstance(s, LocalDecl):
                s.decl.type = fn(s.decl.type)

    def map_exprs(self, fn: ExprFn) -> None:
        for s in self.body:
            s.map_exprs(fn)

    def print(self, p: Printer, indent: int) -> None:
        pad = "  " * indent
        p.out.append(f"{pad}{p.lhs(self)}solar.kernel @{self.symbol}({format_bindings(self.inputs)}) -> "
                     f"({format_decls(self.outputs)}){p.attrs_clause(self)} {{\n")
        print_kstmts(p, self.body, indent + 1)
        p.out.append(f"{pad}}}{p.src_loc(self)}\n")

    # ---- verification ----------------------------------------------------------------------------
    def verify(self, v: Verifier, for_vars: set[str]) -> None:
        v.declare_symbol(self.symbol, self.loc, "kernel")
        tensors: dict[str, TensorType] = {}
        roles: dict[str, str] = {}
        where: dict[str, Location] = {}

        def declare(name: str, t: TensorType | None, loc: Location, role: str) -> None:
            if name in where:
                v.error(f"tensor name {name} is used twice in kernel @{self.symbol}", loc,
                        [note("first here", where[name])])
                return
            if name in v.params:
                v.error(f"tensor name {name} is also a size parameter", loc)
            if name in RESERVED_WORDS:
                v.error(f"'{name}' is a keyword of SIR and cannot name a tensor", loc)
            where[name] = loc
            roles[name] = role
            if t is not None:
                tensors[name] = t

        for b in self.inputs:
            declare(b.name, b.value.type, b.loc, "input")
        for d in self.outputs:
            declare(d.name, d.type, d.loc, "output")
        if not self.outputs:
            v.error(f"kernel @{self.symbol} has no outputs", self.loc)
        for d in self.locals():
            v.check_type(d.type, d.loc)
            declare(d.name, d.type, d.loc, "local")
        check = _BodyCheck(v, roles)
        check.stmts(self.body, KernelScope(tensors, set(for_vars)))
        for d in self.outputs:
            if d.name not in check.written:
                v.error(f"output {d.name} of kernel @{self.symbol} is never written", d.loc)


class _BodyCheck:
    """The checks of one kernel body: bounds, guards, stores and their reductions."""

    def __init__(self, v: Verifier, roles: dict[str, str]) -> None:
        self.v = v
        self.roles = roles
        self.reductions: dict[str, tuple[str, Location]] = {}
        self.written: set[str] = set()

    def stmts(self, body: list[KStmt], scope: KernelScope) -> None:
        v = self.v
        for s in body:
            if isinstance(s, AffineFor):
                if s.var in scope.indices:
                    v.error(f"loop index %{s.var} is already bound by an enclosing loop", s.loc)
                self.bound(s.lower, "max", scope.indices, "lower")
                self.bound(s.upper, "min", scope.indices, "upper")
                self.stmts(s.body, KernelScope(scope.tensors, scope.indices | {s.var}, scope.elements))
            elif isinstance(s, AffineIf):
                self.condition(s.cond, scope.indices)
                self.stmts(s.body, scope)
            elif isinstance(s, Assign):
                self.assign(s, scope)
                self.written.add(s.target.tensor)

    def bound(self, expr: Expr, combiner: str, indices: set[str], which: str) -> None:
        parts = expr.args if isinstance(expr, Call) and expr.func == combiner else (expr,)
        if isinstance(expr, Call) and expr.func in ("max", "min") and expr.func != combiner:
            self.v.error(f"{'an' if which == 'upper' else 'a'} {which} loop bound may use {combiner}(...), "
                         f"not {expr.func}(...)", expr.loc)
            return
        for part in parts:
            self.v.check_affine(part, indices, part.loc, f"the {which} loop bound")

    def condition(self, cond: Expr, indices: set[str]) -> None:
        if isinstance(cond, Binary) and cond.op == "and":
            self.condition(cond.lhs, indices)
            self.condition(cond.rhs, indices)
        elif isinstance(cond, Binary) and cond.op in COMPARISONS and cond.op != "!=":
            self.v.check_affine(cond.lhs, indices, cond.lhs.loc, "an affine.if constraint")
            self.v.check_affine(cond.rhs, indices, cond.rhs.loc, "an affine.if constraint")
        else:
            self.v.error(f"affine.if needs affine constraints joined by 'and' (==, <, <=, >, >=), not "
                         f"`{format_expr(cond)}`", cond.loc)

    def assign(self, s: Assign, scope: KernelScope) -> None:
        v = self.v
        target = s.target
        role = self.roles.get(target.tensor)
        if role == "input":
            v.error(f"cannot write to {target.tensor}: it is an input of the kernel", target.loc)
        target_type = v.access(target, scope)
        kind = s.reduction
        if kind is not None:
            prior = self.reductions.get(target.tensor)
            if prior is not None and prior[0] != kind:
                v.error(f"{target.tensor} is reduced with both {prior[0]} and {kind}; a buffer takes one kind "
                        "of reduction (its identity fills it)", s.loc, [note("first reduction here", prior[1])])
            elif prior is None:
                self.reductions[target.tensor] = (kind, s.loc)
            if target_type is not None and target_type.is_bool and kind != "max" and kind != "min":
                v.error(f"{s.op} is not defined on i1; use max= (or) or min= (and)", s.loc)
        value_type = v.etype(s.value, scope)
        if target_type is not None:
            check_store(v, value_type, target_type, s.value)
