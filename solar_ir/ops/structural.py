"""The structural ops: the module, functions, fusion groups, loops and branches over composition ops, calls
and the terminators of their regions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..diagnostics import UNKNOWN, Location, note
from ..dtypes import DType
from ..expr import Expr, format_expr, free_indices
from ..printer import Printer, format_types, format_values
from ..types import PARAM_NAME, TensorType, types_equal
from ..verify_base import Signature, suggest
from .base import ArgsOp, ExprFn, Op, TypeFn, Value

if TYPE_CHECKING:
    from ..verifier import Verifier


@dataclass(slots=True)
class Param:
    name: str
    default: int | None
    loc: Location = UNKNOWN


def _fmt_types(types: list[TensorType]) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"


def _result_arrow(types: list[TensorType]) -> str:
    return f" -> {format_types(types)}" if types else ""


class FuncOp(Op):
    opname = "solar.func"
    __slots__ = ("args", "body", "name", "result_types")

    def __init__(self, name: str, args: list[Value], result_types: list[TensorType], body: list[Op] | None = None,
                 loc: Location = UNKNOWN) -> None:
        super().__init__(loc)
        self.name = name
        self.args = args
        self.result_types = result_types  # what the function returns; the op itself has no results
        self.body: list[Op] = body if body is not None else []
        for arg in args:
            arg.owner = self

    @property
    def regions(self) -> list[list[Op]]:
        return [self.body]

    @property
    def block_args(self) -> list[Value]:
        return self.args

    def map_types(self, fn: TypeFn) -> None:
        self.result_types = [fn(t) for t in self.result_types]

    def verify(self, v: Verifier, for_vars: set[str]) -> None:
        for arg in self.args:
            v.check_type(arg.type, arg.loc)
        for t in self.result_types:
            v.check_type(t, self.loc)
        v.symbols = {}
        v.block(self.body, ReturnOp, self.result_types, set(), self.loc, f"function @{self.name}")

    def print(self, p: Printer, indent: int) -> None:
        pad = "  " * indent
        args = ", ".join(f"%{a.name}: {a.type}" for a in self.args)
        p.out.append(f"{pad}solar.func @{self.name}({args}){_result_arrow(self.result_types)}"
                     f"{p.attrs_clause(self)} {{\n")
        p.block(self.body, indent + 1)
        p.out.append(f"{pad}}}{p.src_loc(self)}\n")


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

    def verify(self, v: Verifier, for_vars: set[str]) -> None:
        seen_params: dict[str, Location] = {}
        for p in self.params:
            if not PARAM_NAME.match(p.name):
                v.error(f"size parameter '{p.name}' must be spelled in capitals, digits and '_', starting "
                        "with a capital (it appears in tensor types)", p.loc)
            if p.name in seen_params:
                v.error(f"size parameter {p.name} is declared twice", p.loc,
                        [note("first here", seen_params[p.name])])
            seen_params[p.name] = p.loc
            if p.default is not None and p.default <= 0:
                v.error(f"size parameter {p.name} must be positive, not {p.default}", p.loc)
        v.params = set(seen_params)
        v.defaults = self.param_values()
        v.module_defaults = self.param_values()
        v.functions = {}
        for func in self.funcs:
            v.functions.setdefault(func.name, Signature([a.type for a in func.args if a.type is not None],
                                                        list(func.result_types)))
        seen_funcs: dict[str, FuncOp] = {}
        for func in self.funcs:
            if func.name in seen_funcs:
                v.error(f"function @{func.name} is defined twice", func.loc,
                        [note("first definition here", seen_funcs[func.name].loc)])
            seen_funcs[func.name] = func
        for func in self.funcs:
            func.verify(v, set())  # not through `v.op`: an error about a function carries no origin

    def print(self, p: Printer, indent: int) -> None:
        head = "solar.module"
        if self.name is not None:
            head += " @" + self.name
        if self.params:
            head += " [" + ", ".join(q.name if q.default is None else f"{q.name} = {q.default}"
                                     for q in self.params) + "]"
        p.out.append(head + p.attrs_clause(self) + " {\n")
        for i, func in enumerate(self.funcs):
            if i:
                p.out.append("\n")
            func.print(p, indent + 1)
        p.out.append("}" + p.src_loc(self) + "\n")


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

    def declared_types(self) -> list[TensorType]:
        return list(self.result_types)

    def map_types(self, fn: TypeFn) -> None:
        self.result_types = [fn(t) for t in self.result_types]

    def verify(self, v: Verifier, for_vars: set[str]) -> None:
        v.declare_symbol(self.symbol, self.loc, "group")
        for inner in self.body:
            if isinstance(inner, GroupOp | ForOp | IfOp):
                v.error(f"{inner.opname} cannot be nested in a fusion group", inner.loc)
        v.block(self.body, YieldOp, self.result_types, for_vars, self.loc, f"group @{self.symbol}")

    def print(self, p: Printer, indent: int) -> None:
        pad = "  " * indent
        p.out.append(f"{pad}{p.lhs(self)}solar.group @{self.symbol}{_result_arrow(self.result_types)}"
                     f"{p.attrs_clause(self)} {{\n")
        p.block(self.body, indent + 1)
        p.out.append(f"{pad}}}{p.src_loc(self)}\n")


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

    @property
    def block_args(self) -> list[Value]:
        return self.iter_args

    def resolve_block_args(self) -> None:
        for arg, init in zip(self.iter_args, self.inits, strict=True):
            # An iteration argument has the type of its initial value.
            arg.type = init.type
            arg.owner = self

    def declared_types(self) -> list[TensorType]:
        return list(self.result_types)

    def map_types(self, fn: TypeFn) -> None:
        self.result_types = [fn(t) for t in self.result_types]

    def map_exprs(self, fn: ExprFn) -> None:
        self.lower, self.upper = fn(self.lower), fn(self.upper)

    def verify(self, v: Verifier, for_vars: set[str]) -> None:
        for bound in (self.lower, self.upper):
            if any(True for _ in free_indices(bound)):
                v.error(f"solar.for bound `{format_expr(bound)}` must not depend on a loop index "
                        "(the trip count is static)", bound.loc)
            else:
                v.check_affine(bound, set(), bound.loc, "a solar.for bound")
        if self.var in for_vars:
            v.error(f"loop index %{self.var} shadows an enclosing solar.for index", self.loc)
        if len(self.iter_args) != len(self.result_types):
            v.error(f"solar.for has {len(self.iter_args)} iter_args but {len(self.result_types)} result type(s)",
                    self.loc)
        for arg, init, t in zip(self.iter_args, self.inits, self.result_types, strict=False):
            if init.type is not None and not types_equal(init.type, t):
                v.error(f"iter_arg %{arg.name} starts from %{init.name} of type {init.type} but the loop "
                        f"carries {t}", self.use_loc(init))
        v.block(self.body, YieldOp, self.result_types, for_vars | {self.var}, self.loc, "solar.for")

    def print(self, p: Printer, indent: int) -> None:
        pad = "  " * indent
        iters = ""
        if self.iter_args:
            iters = " iter_args(" + ", ".join(
                f"%{a.name} = %{i.name}" for a, i in zip(self.iter_args, self.inits, strict=True)) + ")"
        p.out.append(f"{pad}{p.lhs(self)}solar.for %{self.var} = {format_expr(self.lower)} to "
                     f"{format_expr(self.upper)}{iters}{_result_arrow(self.result_types)}{p.attrs_clause(self)} {{\n")
        p.block(self.body, indent + 1)
        p.out.append(f"{pad}}}{p.src_loc(self)}\n")


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

    def declared_types(self) -> list[TensorType]:
        return list(self.result_types)

    def map_types(self, fn: TypeFn) -> None:
        self.result_types = [fn(t) for t in self.result_types]

    def verify(self, v: Verifier, for_vars: set[str]) -> None:
        t = self.cond.type
        if t is not None and (t.rank != 0 or t.dtype != DType.I1):
            v.error(f"solar.if condition %{self.cond.name} must be tensor<i1>, not {t}", self.use_loc(self.cond))
        v.block(self.then_body, YieldOp, self.result_types, for_vars, self.loc, "solar.if")
        if self.else_body or self.result_types:
            v.block(self.else_body, YieldOp, self.result_types, for_vars, self.loc, "the else region of solar.if")

    def print(self, p: Printer, indent: int) -> None:
        pad = "  " * indent
        p.out.append(f"{pad}{p.lhs(self)}solar.if %{self.cond.name}{_result_arrow(self.result_types)}"
                     f"{p.attrs_clause(self)} {{\n")
        p.block(self.then_body, indent + 1)
        if self.else_body:
            p.out.append(f"{pad}}} else {{\n")
            p.block(self.else_body, indent + 1)
        p.out.append(f"{pad}}}{p.src_loc(self)}\n")


class CallOp(ArgsOp):
    opname = "solar.call"
    results_may_be_unnamed = True
    __slots__ = ("args", "callee", "result_types")

    def __init__(self, callee: str, args: list[Value], result_types: list[TensorType], loc: Location = UNKNOWN) -> None:
        super().__init__(loc)
        self.callee = callee
        self.args = args
        self.result_types = result_types

    def map_types(self, fn: TypeFn) -> None:
        self.result_types = [fn(t) for t in self.result_types]

    def verify(self, v: Verifier, for_vars: set[str]) -> None:
        callee = v.functions.get(self.callee)
        if callee is None:
            v.error(f"call to undefined function @{self.callee}{suggest(self.callee, v.functions)}", self.loc)
            return
        v.check_values_match(self.args, callee.arg_types, self, f"the call to @{self.callee}")
        if len(self.result_types) != len(callee.result_types) or not all(
                types_equal(a, b) for a, b in zip(self.result_types, callee.result_types, strict=False)):
            v.error(f"call to @{self.callee} declares results {_fmt_types(self.result_types)} but the function "
                    f"returns {_fmt_types(callee.result_types)}", self.loc)

    def print(self, p: Printer, indent: int) -> None:
        types = f" : {format_types(self.result_types)}" if self.result_types else ""
        p.out.append(f"{'  ' * indent}{p.lhs(self)}solar.call @{self.callee}({format_values(self.args)}){types}"
                     f"{p.src_loc(self)}\n")


class TerminatorOp(Op):
    """Ends a region, giving its values (the block's `verify` checks them against what the region yields)."""

    is_terminator = True
    __slots__ = ("values",)

    def __init__(self, values: list[Value], loc: Location = UNKNOWN) -> None:
        super().__init__(loc)
        self.values = values

    @property
    def operands(self) -> list[Value]:
        return list(self.values)

    def set_operand(self, k: int, value: Value) -> None:
        self.values[k] = value

    def print(self, p: Printer, indent: int) -> None:
        p.out.append(f"{'  ' * indent}{self.opname} {format_values(self.values)}{p.src_loc(self)}\n")


class ReturnOp(TerminatorOp):
    opname = "solar.return"
    __slots__ = ()


class YieldOp(TerminatorOp):
    opname = "solar.yield"
    __slots__ = ()
