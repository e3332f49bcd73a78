"""What every part of the verifier shares: the checker's state and error reporting (`Checker`), the names
inside a kernel body (`KernelScope`), the types a scalar expression can have (`EType`), affinity checks and
small helpers."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .diagnostics import DiagnosticEngine, Location, note
from .dtypes import DType
from .expr import Expr, IndexRef, IntLit, affine_violation, free_indices, free_names
from .expr_values import evaluate_int
from .types import Dim, TensorType

# Words of SIR that cannot name a tensor of a kernel or einsum.
RESERVED_WORDS = frozenset({"as", "to", "step", "local", "where", "into", "and", "or", "not", "floordiv", "ceildiv",
                            "mod", "true", "false", "inf", "nan", "iter_args", "else", "attributes", "loc"})


def suggest(name: str, candidates: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(candidates), n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


# Literal types: a literal takes the element type of what it meets.
INT_LIT, FLOAT_LIT, BOOL_LIT = "integer literal", "float literal", "boolean literal"
EType = DType | str | None  # None: an error was already reported


class KernelScope:
    """What names mean inside one kernel or einsum body."""

    def __init__(self, tensors: dict[str, TensorType], indices: set[str], elements: dict[str, DType] | None = None):
        self.tensors = tensors
        self.indices = indices  # loop indices in scope (affine.for and solar.for), without '%'
        self.elements = elements or {}  # einsum: bound operand name -> element type


@dataclass(frozen=True, slots=True)
class Signature:
    """What a call checks of the function it calls."""

    arg_types: list[TensorType]
    result_types: list[TensorType]


class Checker:
    """The verifier's state while it walks a module, and its error reporting. What the checks need of the
    module is plain data, filled by the module op as it verifies itself."""

    def __init__(self, diagnostics: DiagnosticEngine) -> None:
        self.diag = diagnostics
        self.params: set[str] = set()
        self.defaults: dict[str, int] = {}
        # The module's functions by name (the first of a name), and its size parameters' default values;
        # both empty when an op is asked for its types alone (`infer_result_types`).
        self.functions: dict[str, Signature] = {}
        self.module_defaults: dict[str, int] = {}
        # Where the op being checked was translated from, if it was.
        self.current_src_loc: Location | None = None

    def error(self, message: str, loc: Location, notes: list[Any] | None = None) -> None:
        # An op translated from other source says where it came from.
        src = self.current_src_loc
        if src is not None:
            notes = [*(notes or []), note("translated from here", src)]
        self.diag.error(message, loc, notes)

    def check_affine(self, expr: Expr, indices: set[str], loc: Location, what: str) -> bool:
        if isinstance(expr, IntLit) or (isinstance(expr, IndexRef) and expr.name in indices):
            return True  # most indices and bounds: decided without walking the expression
        names = _affine_names(expr)
        if names is not None and names[0] <= indices and names[1] <= self.params:
            return True  # an affine expression of known names: each error below needs its own node
        bad = affine_violation(expr)
        if bad is not None:
            node, why = bad
            self.error(f"{what} must be affine: {why}", node.loc)
            return False
        ok = True
        for ref in free_indices(expr):
            if ref.name not in indices:
                self.error(f"unknown loop index %{ref.name}{suggest(ref.name, indices)}", ref.loc)
                ok = False
        for name in free_names(expr):
            if name.name not in self.params:
                self.error(f"unknown size parameter {name.name}{suggest(name.name, self.params)}", name.loc)
                ok = False
        return ok


@lru_cache(maxsize=8192)
def _affine_names(expr: Expr) -> tuple[frozenset[str], frozenset[str]] | None:
    """The loop indices and size parameters an affine expression names, None when it is not affine. Kept
    per expression: a network's bounds repeat (`0 to 1 + (-1 + X_2) floordiv 4` in a hundred kernels), and
    each verification after a pass checks them again."""
    if affine_violation(expr) is not None:
        return None
    return frozenset(r.name for r in free_indices(expr)), frozenset(n.name for n in free_names(expr))


def dim_value(d: Dim, values: dict[str, int]) -> int | None:
    if isinstance(d, int):
        return d
    return expr_value(d, values)


def expr_value(e: Expr, values: dict[str, int]) -> int | None:
    try:
        return evaluate_int(e, values)
    except (KeyError, ValueError):
        return None


def literal_fits(lit: str, dtype: DType) -> bool:
    if lit == BOOL_LIT:
        return dtype.is_bool
    if lit == FLOAT_LIT:
        return dtype.is_float
    return not dtype.is_bool


def type_name(t: EType) -> str:
    return str(t)


def as_expr(d: Dim | Expr) -> Expr:
    return IntLit(d) if isinstance(d, int) else d
