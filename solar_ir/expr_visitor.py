"""The one dispatch over expression classes. An interpreter of expressions (typing, printing, folding, ISL
text, operation counts, code generation, evaluation) subclasses `ExprVisitor` and defines the cases it has,
as methods `visit_<kind>(e, *context)`; `visit(e, *context)` calls the one for `e`'s kind (each expression
class names its own, `Expr.kind`, so a subclass takes its base's case). A case an interpreter does not
define reaches `visit_other`, which raises `TypeError` unless the interpreter says otherwise. The table of
cases is built once per subclass, so a visit is one dictionary lookup.

This module imports nothing of solar.ir.expr, so that expr's own interpreters (printing, constant folding,
affine forms) are visitors too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Generic, Protocol, TypeVar

R = TypeVar("R")

# The kind of each expression class (`IntLit.kind` is "int_lit", ...): the names of the cases.
KINDS: tuple[str, ...] = (
    "int_lit", "float_lit", "bool_lit", "index_ref", "name_ref", "access", "unary", "binary", "call", "cast",
)


class Visitable(Protocol):
    """What a visit needs of an expression: the name of its case."""

    kind: ClassVar[str]


class ExprVisitor(Generic[R]):
    """Dispatches `visit(e, *context)` to `visit_<kind>` by `e.kind` (see the module docstring)."""

    _cases: ClassVar[dict[str, Callable[..., Any]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._cases = {kind: getattr(cls, f"visit_{kind}", cls.visit_other) for kind in KINDS}

    def visit(self, e: Visitable, *context: Any) -> R:
        return self._cases[e.kind](self, e, *context)

    def visit_other(self, e: Visitable, *context: Any) -> R:
        raise TypeError(f"{type(self).__name__} has no case for {type(e).__name__}: {e}")
