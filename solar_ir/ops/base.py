"""What every op shares: SSA values, attribute values, and the `Op` base class whose methods each op class
overrides to own its behaviour: the values it reads (`operands`, `set_operand`), its regions, the types it
declares (`declared_types`), its verification (`verify`), its printing (`print`) and the types and
expressions it holds (`map_types`, `map_exprs`).

Every op class with an `opname` is registered in `OP_CLASSES` under that name; nothing outside the op's own
module dispatches on its class (see docs/writing-an-op.md)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar

from ..attr_values import AttrValue
from ..diagnostics import UNKNOWN, Location
from ..expr import Expr
from ..index_map import IndexMap
from ..printer import Printer
from ..types import Dim, TensorType
from ..verifier import Verifier

TypeFn = Callable[[TensorType], TensorType]
ExprFn = Callable[[Expr], Expr]


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


# Every op class by its name (`solar.slice` -> SliceOp), filled as the classes are defined.
OP_CLASSES: dict[str, type[Op]] = {}


class Op:
    """The base of every op. The class attributes below are its traits; the methods are what an op class
    overrides (each in one place: the op's module)."""

    opname: ClassVar[str] = ""
    # Ends a block (solar.return, solar.yield).
    is_terminator: ClassVar[bool] = False
    # May leave its results unnamed (a call whose results nobody reads).
    results_may_be_unnamed: ClassVar[bool] = False
    # A layout op: its result is a view of its operand (or a constant), so it moves no data itself and the
    # fusion and cost analyses see through it.
    is_view: ClassVar[bool] = False
    # A data-movement op (concat, gather, scatter, insert): no arithmetic, but it reads and writes tensors,
    # so it is a unit of execution of its own.
    moves_data: ClassVar[bool] = False
    # Its results hold its operands' elements, rearranged (layout ops, slices, concat): whatever range an
    # operand's values keep to, the results keep to it too.
    forwards_values: ClassVar[bool] = False
    # Where its backend hooks are declared: "module:name" of a `solar.backends.op_hooks.HookSet`, which a
    # backend installs the first time it looks the class up. A string, so the IR core imports no backend.
    backend_hooks: ClassVar[str] = ""

    __slots__ = ("attrs", "loc", "results", "src_loc", "use_locs")

    def __init__(self, loc: Location = UNKNOWN) -> None:
        self.loc = loc
        self.attrs: dict[str, AttrValue] = {}
        self.results: list[Value] = []
        # An explicit `loc("file":line:col)` naming the source this op was translated from.
        self.src_loc: Location | None = None
        # Where each operand was written (by the operand's id), so errors point at the use, not the definition.
        self.use_locs: dict[int, Location] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("opname"):
            OP_CLASSES[cls.opname] = cls

    def use_loc(self, value: Value) -> Location:
        return self.use_locs.get(id(value), self.loc)

    # ---- structure --------------------------------------------------------------------------------
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

    @property
    def block_args(self) -> list[Value]:
        """The values this op defines for its regions (a function's arguments, a loop's iter_args)."""
        return []

    def resolve_block_args(self) -> None:
        """Called by the parser once the operands are linked: block arguments whose types follow from the
        operands take them (a loop's iter_args, from their initial values)."""

    def declared_types(self) -> list[TensorType]:
        """The types this op declares for its results."""
        return []

    def indexed_dim(self, value: Value) -> Dim | None:
        """The extent of the dimension that `value` indexes, where this op reads it as indices (a gather's or
        scatter's), else None."""
        return None

    def set_declared_types(self, types: list[TensorType]) -> None:
        """Declares `types` as the result types (the builder, after inferring them)."""
        raise TypeError(f"{self.opname} declares no result types of its own")

    @property
    def result(self) -> Value:
        if len(self.results) != 1:
            raise ValueError(f"{self.opname} has {len(self.results)} results, not one")
        return self.results[0]

    def clone(self, mapping: dict[Value, Value] | None = None) -> Op:
        """A copy of this op and everything nested in it, with fresh result values. Operands defined outside
        it stay as they are, or become `mapping[value]`; the names are the original ones."""
        return clone_ops([self], mapping)[0]

    def walk(self) -> Iterator[Op]:
        """This op and every op nested in its regions, in program order."""
        yield self
        for region in self.regions:
            for op in region:
                yield from op.walk()

    # ---- behaviour each op class owns -------------------------------------------------------------
    def verify(self, v: Verifier, for_vars: set[str]) -> None:
        """Reports through `v` every way this op breaks the rules of docs/ir.md (its operands' types, its
        attributes, its regions); `for_vars` are the solar.for indices in scope. The checks every op shares
        (declared types, named results) have run already."""

    def infer_result_types(self, v: Verifier) -> list[TensorType] | None:
        """The result types this op's operands and attributes give, reporting through `v` why there are none;
        None also for an op whose types are only declared (a kernel's outputs, a group's results). `verify`
        compares them with `declared_types`; the builder and the frontends use them to fill the types in
        (`solar.ir.verifier.infer_result_types`)."""
        return None

    def print(self, p: Printer, indent: int) -> None:
        """Appends this op's canonical text (one or more full lines) to `p`."""
        raise TypeError(f"cannot print {self!r}")

    def index_map(self, values: Mapping[str, int]) -> IndexMap | None:
        """For a layout op (`is_view`) with an operand: how its result's indices map to its operand's
        (solar.ir.index_map), with the size parameters' `values`; None for every other op. Tiling, chain
        following and the exporters read this, not the op's class. Raises NotAffine where the map has no
        affine form at these values."""
        return None

    def map_types(self, fn: TypeFn) -> None:
        """Replaces every type this op declares (results, outputs, locals) by `fn` of it; block arguments and
        results are values, which `solar.ir.rewrite.map_types` maps."""

    def map_exprs(self, fn: ExprFn) -> None:
        """Replaces every expression this op holds (bounds, indices, values, slice entries) by `fn` of it;
        nested ops map their own."""

    def __repr__(self) -> str:
        return f"<{self.opname} at {self.loc}>"


def result_types_of(op: Op) -> list[TensorType]:
    """The types an op declares for its results."""
    return op.declared_types()


def defined_inside(ops: list[Op]) -> set[Value]:
    """Every value that `ops` and the ops nested in them define: results and block arguments."""
    out: set[Value] = set()
    for top in ops:
        for op in top.walk():
            out.update(op.results)
            out.update(op.block_args)
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


class ArgsOp(Op):
    """An op whose operands are a plain list `args` and whose result types are listed in `result_types`:
    calls and the generic-syntax ops."""

    __slots__ = ()
    args: list[Value]
    result_types: list[TensorType]

    @property
    def operands(self) -> list[Value]:
        return list(self.args)

    def set_operand(self, k: int, value: Value) -> None:
        self.args[k] = value

    def declared_types(self) -> list[TensorType]:
        return list(self.result_types)
