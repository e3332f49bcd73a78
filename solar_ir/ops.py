"""The operations of SIR. Composition-level ops take and define SSA `Value`s; a `KernelOp` holds an affine
loop nest (`KStmt`s) over tensors bound by name; an `EinsumOp` is one extended einsum.

Ops are plain mutable objects: passes edit them in place or build new ones through `solar.ir.Builder`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .diagnostics import UNKNOWN, Location
from .expr import Access, Expr
from .types import TensorType


@dataclass(frozen=True, slots=True)
class Word:
    """A bare word attribute value, such as `add` in `{reduce = add}`."""

    name: str

    def __post_init__(self) -> None:
        # These spell literals, so as words they would read back as a float or a bool.
        if self.name in ("inf", "nan", "true", "false") or not self.name.isidentifier():
            raise ValueError(f"'{self.name}' cannot be a bare-word attribute value; use a string")


@dataclass(frozen=True, slots=True)
class SymbolRef:
    name: str  # without '@'


AttrValue = Any  # int | float | bool | str | Word | SymbolRef | TensorType | list | dict


class Value:
    """An SSA tensor value. `owner` is the op that defines it (for block arguments: the func or for op)."""

    __slots__ = ("loc", "name", "owner", "type")

    def __init__(self, name: str, type: TensorType | None, owner: Op | None = None, loc: Location = UNKNOWN) -> None:
        self.name = name  # without '%'
        self.type = type  # None only for an unresolved use after a reported error
        self.owner = owner
        self.loc = loc

    def __repr__(self) -> str:
        return f"%{self.name}: {self.type}"


class Op:
    opname: ClassVar[str] = ""
    __slots__ = ("attrs", "loc", "results", "src_loc", "use_locs")

    def __init__(self, loc: Location = UNKNOWN) -> None:
        self.loc = loc
        self.attrs: dict[str, AttrValue] = {}
        self.results: list[Value] = []
        # An explicit `loc("file":line:col)` naming the source this op was translated from.
        self.src_loc: Location | None = None
        # Where each operand was written (by the operand's id), so errors point at the use, not the definition.
        self.use_locs: dict[int, Location] = {}

    def use_loc(self, value: Value) -> Location:
        return self.use_locs.get(id(value), self.loc)

    @property
    def operands(self) -> list[Value]:
        """The values this op reads, in a fixed order (`set_operand` writes position k)."""
        return []

    def set_operand(self, k: int, value: Value) -> None:
        """Makes operand `k` (in the order of `operands`) `value`; each op class knows where it keeps it."""
        raise IndexError(f"{self.opname} has no operand {k}")

    @property
    def regions(self) -> list[list[Op]]:
        return []

    def clone(self, mapping: dict[Value, Value] | None = None) -> Op:
        """A copy of this op and everything nested in it, with fresh result values. Operands defined outside
        it stay as they are, or become `mapping[value]`; the names are the original ones."""
        return clone_ops([self], mapping)[0]

    @property
    def result(self) -> Value:
        if len(self.results) != 1:
            raise ValueError(f"{self.opname} has {len(self.results)} results, not one")
        return self.results[0]

    def walk(self) -> Iterator[Op]:
        """This op and every op nested in its regions, in program order."""
        yield self
        for region in self.regions:
            for op in region:
                yield from op.walk()

    def __repr__(self) -> str:
        return f"<{self.opname} at {self.loc}>"


def defined_inside(ops: list[Op]) -> set[Value]:
    """Every value that `ops` and the ops nested in them define: results and block arguments."""
    out: set[Value] = set()
    for top in ops:
        for op in top.walk():
            out.update(op.results)
            out.update(getattr(op, "iter_args", ()))
            out.update(getattr(op, "args", ()) if isinstance(op, FuncOp) else ())
    return out


def clone_ops(ops: list[Op], mapping: dict[Value, Value] | None = None) -> list[Op]:
    """Copies of `ops` (one block, in order) and everything nested in them, sharing one value map: a value
    one of them defines is read by the later copies as its copy. Operands defined outside the block stay
    (or become `mapping[value]`), and so does the op that owns them, so nothing outside is copied."""
    mapping = mapping or {}
    inside = defined_inside(ops)
    memo: dict[int, Any] = {}
    for top in ops:
        for op in top.walk():
            for v in op.operands:
                if v not in inside:
                    memo[id(v)] = mapping.get(v, v)
                    if v.owner is not None:
                        memo.setdefault(id(v.owner), v.owner)
    return copy.deepcopy(ops, memo)


# ---- module and functions -------------------------------------------------------------------------


@dataclass(slots=True)
class Param:
    name: str
    default: int | None
    loc: Location = UNKNOWN


class FuncOp(Op):
    opname = "solar.func"
    __slots__ = ("args", "body", "name", "result_types")

    def __init__(self, name: str, args: list[Value], result_types: list[TensorType], body: list[Op] | None = None,
                 loc: Location = UNKNOWN) -> None:
        super().__init__(loc)
        self.name = name
        self.args = args
        self.result_types = result_types
        self.body: list[Op] = body if body is not None else []
        for arg in args:
            arg.owner = self

    @property
    def regions(self) -> list[list[Op]]:
        return [self.body]


class ModuleOp(Op):
    opname = "solar.module"
    __slots__ = ("funcs", "name", "params")

    def __init__(self, name: str | None = None, params: list[Param] | None = None, funcs: list[FuncOp] | None = None,
                 loc: Location = UNKNOWN) -> None:
        super().__init__(loc)
        self.name = name
        self.params: list[Param] = params if params is not None else []
        self.funcs: list[FuncOp] = funcs if funcs is not None else []

    @property
    def regions(self) -> list[list[Op]]:
        return [list(self.funcs)]

    def lookup(self, name: str) -> FuncOp | None:
        return next((f for f in self.funcs if f.name == name), None)

    @property
    def entry(self) -> FuncOp | None:
        return self.lookup("main") or (self.funcs[0] if self.funcs else None)

    def param_values(self) -> dict[str, int]:
        return {p.name: p.default for p in self.params if p.default is not None}


# ---- kernel level ---------------------------------------------------------------------------------


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


class KStmt:
    __slots__ = ("loc",)


class LocalDecl(KStmt):
    __slots__ = ("decl",)

    def __init__(self, decl: TensorDecl, loc: Location = UNKNOWN) -> None:
        self.decl = decl
        self.loc = loc


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


class AffineIf(KStmt):
    __slots__ = ("body", "cond")

    def __init__(self, cond: Expr, body: list[KStmt] | None = None, loc: Location = UNKNOWN) -> None:
        self.cond = cond
        self.body: list[KStmt] = body if body is not None else []
        self.loc = loc


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


def walk_stmts(body: list[KStmt]) -> Iterator[KStmt]:
    for stmt in body:
        yield stmt
        if isinstance(stmt, AffineFor | AffineIf):
            yield from walk_stmts(stmt.body)


class KernelOp(Op):
    opname = "solar.kernel"
    __slots__ = ("body", "inputs", "outputs", "symbol")

    def __init__(self, symbol: str, inputs: list[Binding], outputs: list[TensorDecl], body: list[KStmt] | None = None,
                 loc: Location = UNKNOWN) -> None:
        super().__init__(loc)
        self.symbol = symbol
        self.inputs = inputs
        self.outputs = outputs
        self.body: list[KStmt] = body if body is not None else []

    @property
    def operands(self) -> list[Value]:
        return [b.value for b in self.inputs]

    def set_operand(self, k: int, value: Value) -> None:
        self.inputs[k].value = value

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


class EinsumStmt:
    __slots__ = ("loc", "op", "target", "value")

    def __init__(self, target: str, op: str, value: Expr, loc: Location = UNKNOWN) -> None:
        self.target = target
        self.op = op
        self.value = value
        self.loc = loc

    @property
    def reduction(self) -> str | None:
        return REDUCTIONS.get(self.op)


class EinsumOp(Op):
    """One extended einsum; `spec` holds the subscripts (see `solar.ir.einsum_spec`)."""

    opname = "solar.einsum"
    __slots__ = ("body", "inputs", "outputs", "spec", "spec_loc", "symbol", "where", "where_loc")

    def __init__(self, symbol: str, spec: str, inputs: list[Binding], outputs: list[TensorDecl],
                 body: list[EinsumStmt], where: str | None = None, loc: Location = UNKNOWN) -> None:
        super().__init__(loc)
        self.symbol = symbol
        self.spec = spec
        self.where = where
        self.inputs = inputs
        self.outputs = outputs
        self.body = body
        # Positions of the subscript strings, so a mistake inside one is reported at its column.
        self.spec_loc: Location = loc
        self.where_loc: Location | None = None

    @property
    def operands(self) -> list[Value]:
        return [b.value for b in self.inputs]

    def set_operand(self, k: int, value: Value) -> None:
        self.inputs[k].value = value


# ---- composition level ----------------------------------------------------------------------------


class GroupOp(Op):
    opname = "solar.group"
    __slots__ = ("body", "result_types", "symbol")

    def __init__(self, symbol: str, result_types: list[TensorType], body: list[Op] | None = None,
                 loc: Location = UNKNOWN) -> None:
        super().__init__(loc)
        self.symbol = symbol
        self.result_types = result_types
        self.body: list[Op] = body if body is not None else []

    @property
    def regions(self) -> list[list[Op]]:
        return [self.body]


class ForOp(Op):
    """`solar.for %t = lo to hi iter_args(%a = %init) -> (T)`: `iter_args` are block arguments."""

    opname = "solar.for"
    __slots__ = ("body", "inits", "iter_args", "lower", "result_types", "upper", "var")

    def __init__(self, var: str, lower: Expr, upper: Expr, iter_args: list[Value], inits: list[Value],
                 result_types: list[TensorType], body: list[Op] | None = None, loc: Location = UNKNOWN) -> None:
        super().__init__(loc)
        self.var = var
        self.lower = lower
        self.upper = upper
        self.iter_args = iter_args
        self.inits = inits
        self.result_types = result_types
        self.body: list[Op] = body if body is not None else []
        for arg in iter_args:
            arg.owner = self

    @property
    def operands(self) -> list[Value]:
        return list(self.inits)

    def set_operand(self, k: int, value: Value) -> None:
        self.inits[k] = value

    @property
    def regions(self) -> list[list[Op]]:
        return [self.body]


class IfOp(Op):
    opname = "solar.if"
    __slots__ = ("cond", "else_body", "result_types", "then_body")

    def __init__(self, cond: Value, result_types: list[TensorType], then_body: list[Op] | None = None,
                 else_body: list[Op] | None = None, loc: Location = UNKNOWN) -> None:
        super().__init__(loc)
        self.cond = cond
        self.result_types = result_types
        self.then_body: list[Op] = then_body if then_body is not None else []
        self.else_body: list[Op] = else_body if else_body is not None else []

    @property
    def operands(self) -> list[Value]:
        return [self.cond]

    def set_operand(self, k: int, value: Value) -> None:
        if k != 0:
            raise IndexError(f"solar.if has one operand, not {k + 1}")
        self.cond = value

    @property
    def regions(self) -> list[list[Op]]:
        return [self.then_body, self.else_body]


class CallOp(Op):
    opname = "solar.call"
    __slots__ = ("args", "callee", "result_types")

    def __init__(self, callee: str, args: list[Value], result_types: list[TensorType], loc: Location = UNKNOWN) -> None:
        super().__init__(loc)
        self.callee = callee
        self.args = args
        self.result_types = result_types

    @property
    def operands(self) -> list[Value]:
        return list(self.args)

    def set_operand(self, k: int, value: Value) -> None:
        self.args[k] = value


class TerminatorOp(Op):
    __slots__ = ("values",)

    def __init__(self, values: list[Value], loc: Location = UNKNOWN) -> None:
        super().__init__(loc)
        self.values = values

    @property
    def operands(self) -> list[Value]:
        return list(self.values)

    def set_operand(self, k: int, value: Value) -> None:
        self.values[k] = value


class ReturnOp(TerminatorOp):
    opname = "solar.return"
    __slots__ = ()


class YieldOp(TerminatorOp):
    opname = "solar.yield"
    __slots__ = ()


Literal = int | float | bool | list


class ConstantOp(Op):
    """A splat scalar or a nested list literal."""

    opname = "solar.constant"
    __slots__ = ("type", "value")

    def __init__(self, value: Literal, type: TensorType, loc: Location = UNKNOWN) -> None:
        super().__init__(loc)
        self.value = value
        self.type = type


@dataclass(slots=True)
class SliceEntry:
    """One dimension of a slice: `index` alone (drops the dim) or `start:stop:step` (None = default)."""

    index: Expr | None = None
    start: Expr | None = None
    stop: Expr | None = None
    step: Expr | None = None
    loc: Location = field(default=UNKNOWN)

    @property
    def is_index(self) -> bool:
        return self.index is not None


class SliceOp(Op):
    opname = "solar.slice"
    __slots__ = ("entries", "source", "type")

    def __init__(self, source: Value, entries: list[SliceEntry], type: TensorType, loc: Location = UNKNOWN) -> None:
        super().__init__(loc)
        self.source = source
        self.entries = entries
        self.type = type

    @property
    def operands(self) -> list[Value]:
        return [self.source]

    def set_operand(self, k: int, value: Value) -> None:
        if k != 0:
            raise IndexError(f"solar.slice has one operand, not {k + 1}")
        self.source = value


class InsertOp(Op):
    opname = "solar.insert"
    __slots__ = ("dest", "entries", "type", "value")

    def __init__(self, value: Value, dest: Value, entries: list[SliceEntry], type: TensorType,
                 loc: Location = UNKNOWN) -> None:
        super().__init__(loc)
        self.value = value
        self.dest = dest
        self.entries = entries
        self.type = type

    @property
    def operands(self) -> list[Value]:
        return [self.value, self.dest]

    def set_operand(self, k: int, value: Value) -> None:
        if k == 0:
            self.value = value
        elif k == 1:
            self.dest = value
        else:
            raise IndexError(f"solar.insert has two operands, not {k + 1}")


class GenericOp(Op):
    """The shape ops written `%r = solar.NAME %a, ... {attrs} : type`."""

    __slots__ = ("args", "result_types")
    registry: ClassVar[dict[str, type[GenericOp]]] = {}

    def __init__(self, args: list[Value], result_types: list[TensorType], attrs: dict[str, AttrValue] | None = None,
                 loc: Location = UNKNOWN) -> None:
        super().__init__(loc)
        self.args = args
        self.result_types = result_types
        if attrs:
            self.attrs.update(attrs)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        GenericOp.registry[cls.opname] = cls

    @property
    def operands(self) -> list[Value]:
        return list(self.args)

    def set_operand(self, k: int, value: Value) -> None:
        self.args[k] = value


class ReshapeOp(GenericOp):
    opname = "solar.reshape"
    __slots__ = ()


class PermuteOp(GenericOp):
    opname = "solar.permute"
    __slots__ = ()


class ConcatOp(GenericOp):
    opname = "solar.concat"
    __slots__ = ()


class BroadcastOp(GenericOp):
    opname = "solar.broadcast"
    __slots__ = ()


class GatherOp(GenericOp):
    opname = "solar.gather"
    __slots__ = ()


class ScatterOp(GenericOp):
    opname = "solar.scatter"
    __slots__ = ()


SCATTER_REDUCTIONS = ("none", "add", "mul", "max", "min")


def result_types_of(op: Op) -> list[TensorType]:
    """The types an op declares for its results."""
    if isinstance(op, KernelOp | EinsumOp):
        return [d.type for d in op.outputs]
    if isinstance(op, ConstantOp | SliceOp | InsertOp):
        return [op.type]
    if isinstance(op, GroupOp | ForOp | IfOp | CallOp | GenericOp):
        return list(op.result_types)
    return []
