"""The verifier: every structural, type and affinity rule of docs/ir.md, reporting all errors in one run.

Each op checks itself (`Op.verify`); the `Verifier` is what they report to and the checks they share: types,
symbols, blocks and their terminators, and (from its mixins) affine expressions and scalar types. It sits
below the ops, which call it, and sees them through the protocol `Checked`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Protocol

from .diagnostics import DiagnosticEngine, Location, note
from .expr import Expr, affine_violation, free_names
from .scalar_types import ScalarTypes
from .types import TensorType, format_dim, types_equal
from .verify_base import RESERVED_WORDS, dim_value, suggest

__all__ = ["RESERVED_WORDS", "Checked", "InferenceError", "Verifier", "infer_result_types", "suggest", "verify"]


class CheckedValue(Protocol):
    """A value as the checks see it (every `solar.ir.ops.Value` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def type(self) -> TensorType | None: ...


class Checked(Protocol):
    """What the verifier needs of an op (every `solar.ir.ops.Op` is one): its traits, where it was written,
    the values it reads and names, the types it declares, and its own checks."""

    opname: ClassVar[str]
    is_terminator: ClassVar[bool]
    results_may_be_unnamed: ClassVar[bool]

    @property
    def loc(self) -> Location: ...

    @property
    def src_loc(self) -> Location | None: ...

    @property
    def results(self) -> Sequence[CheckedValue]: ...

    @property
    def operands(self) -> Sequence[CheckedValue]: ...

    def use_loc(self, value: Any) -> Location: ...

    def declared_types(self) -> list[TensorType]: ...

    def verify(self, v: Verifier, for_vars: set[str]) -> None: ...

    def infer_result_types(self, v: Verifier) -> list[TensorType] | None: ...


def verify(module: Checked, diagnostics: DiagnosticEngine) -> bool:
    """Checks `module` (a `solar.ir.ops.ModuleOp`), adding every problem to `diagnostics`; True when no error
    was found."""
    before = sum(d.severity == "error" for d in diagnostics.diagnostics)
    Verifier(diagnostics).module(module)
    return sum(d.severity == "error" for d in diagnostics.diagnostics) == before


class Verifier(ScalarTypes):
    """Walks a module, letting every op check itself, and holds what the checks share: the size parameters
    and their values, the module, and the symbols defined so far in the current function."""

    def __init__(self, diagnostics: DiagnosticEngine) -> None:
        super().__init__(diagnostics)
        self.symbols: dict[str, Location] = {}

    def module(self, module: Checked) -> None:
        module.verify(self, set())  # not through `op`: errors at module and function level carry no origin

    # ---- what every op's checks share ------------------------------------------------------------
    def op(self, op: Checked, for_vars: set[str]) -> None:
        """Checks what every op shares (its declared types, its named results), then lets it check itself."""
        outer, self.current_src_loc = self.current_src_loc, op.src_loc
        try:
            types = op.declared_types()
            for t in types:
                self.check_type(t, op.loc)
            if op.results and len(op.results) != len(types):
                self.error(f"{op.opname} produces {len(types)} result(s) but {len(op.results)} value(s) are named",
                           op.loc)
            if not op.results and types and not op.results_may_be_unnamed:
                self.error(f"the result of {op.opname} is not named", op.loc)
            op.verify(self, for_vars)
        finally:
            self.current_src_loc = outer

    def block(self, ops: Sequence[Checked], terminator: type[Checked], expected: list[TensorType], for_vars: set[str],
              owner_loc: Location, owner: str) -> None:
        """Checks a region that must end with `terminator` giving values of the `expected` types."""
        if not ops or not isinstance(ops[-1], terminator):
            self.error(f"{owner} must end with {terminator.opname}", ops[-1].loc if ops else owner_loc)
        for i, op in enumerate(ops):
            if op.is_terminator:
                if not isinstance(op, terminator):
                    self.error(f"{op.opname} cannot end {owner}; use {terminator.opname}", op.loc)
                elif i != len(ops) - 1:
                    self.error(f"{op.opname} must be the last operation of {owner}", op.loc)
                else:
                    self.check_values_match(op.operands, expected, op, f"{op.opname} of {owner}")
                continue
            self.op(op, for_vars)

    def check_values_match(self, values: Sequence[CheckedValue], types: list[TensorType], op: Checked,
                           what: str) -> None:
        if len(values) != len(types):
            self.error(f"{what} gives {len(values)} value(s) but {len(types)} are expected", op.loc)
            return
        for v, t in zip(values, types, strict=True):
            if v.type is not None and not types_equal(v.type, t):
                self.error(f"%{v.name} has type {v.type} but {what} expects {t}", op.use_loc(v))

    def check_type(self, t: TensorType | None, loc: Location) -> None:
        if t is None:
            return
        for d in t.shape:
            size = dim_value(d, self.defaults)
            if size is not None and size < 0:
                self.error(f"dimension {format_dim(d)} of {t} is {size}: sizes cannot be negative"
                           + (" (with the size parameters' values)" if isinstance(d, Expr) else ""), loc)
            if isinstance(d, Expr):
                bad = affine_violation(d)
                if bad is not None:
                    self.error(f"dimension {format_dim(d)} of {t} must be affine in the size parameters: {bad[1]} "
                               "(introduce a parameter for the product)", loc)
                for ref in free_names(d):
                    if ref.name not in self.params:
                        self.error(f"size parameter {ref.name} in {t} is not declared{suggest(ref.name, self.params)}"
                                   " (declare it as `solar.module @name [" + ref.name + " = ...]`)", loc)

    def declare_symbol(self, symbol: str, loc: Location, kind: str) -> None:
        prior = self.symbols.get(symbol)
        if prior is not None:
            self.error(f"{kind} @{symbol} is defined twice in this function", loc,
                       [note("first definition here", prior)])
        else:
            self.symbols[symbol] = loc

    def expect_type(self, op: Checked, expected: TensorType, declared: TensorType) -> None:
        """The type an op's operands and attributes give (`expected`) must be the one it declares."""
        if not types_equal(expected, declared):
            self.error(f"{op.opname} result type {declared} does not match the operands: expected {expected}",
                       op.loc)


class InferenceError(ValueError):
    """An op's result types cannot be inferred from its operands and attributes (the message says why)."""


class _Inference(Verifier):
    """A verifier whose first error is raised: what `infer_result_types` asks the op through."""

    def error(self, message: str, loc: Location, notes: list[Any] | None = None) -> None:
        raise InferenceError(message)


def infer_result_types(op: Checked, params: dict[str, int | None] | None = None) -> list[TensorType]:
    """The result types of `op` as its operands and attributes give them (`Op.infer_result_types`); raises
    InferenceError when they do not, or when the op only declares its types. `params` are the size
    parameters the types may name, with their values where known."""
    v = _Inference(DiagnosticEngine())
    v.params = set(params or ())
    v.defaults = {k: n for k, n in (params or {}).items() if n is not None}
    types = op.infer_result_types(v)
    if types is None:
        raise InferenceError(f"{op.opname} declares its result types; they cannot be inferred")
    return types
