"""The one dispatch over expression classes. An interpreter of expressions (typing, ISL text, operation
counts, code generation, evaluation) subclasses `ExprVisitor` and defines the cases it has, as methods
`visit_<kind>(e, *context)`; `visit(e, *context)` calls the one for `e`'s class. A case an interpreter does
not define reaches `visit_other`, which raises `TypeError` unless the interpreter says otherwise. The table
of cases is built once per subclass, so a visit is one dictionary lookup.

    int_lit  float_lit  bool_lit  index_ref  name_ref  access  unary  binary  call  cast
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar

from .expr import Access, Binary, BoolLit, Call, Cast, Expr, FloatLit, IndexRef, IntLit, NameRef, Unary

R = TypeVar("R")

# Each expression class and the name of its case.
CASES: dict[type[Expr], str] = {
    IntLit: "int_lit", FloatLit: "float_lit", BoolLit: "bool_lit", IndexRef: "index_ref", NameRef: "name_ref",
    Access: "access", Unary: "unary", Binary: "binary", Call: "call", Cast: "cast",
}


class ExprVisitor(Generic[R]):
    """Dispatches `visit(e, *context)` to `visit_<kind>` by the class of `e` (see the module docstring)."""

    _cases: ClassVar[dict[type[Expr], Callable[..., Any]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._cases = {node: getattr(cls, f"visit_{kind}", cls.visit_other) for node, kind in CASES.items()}

    def visit(self, e: Expr, *context: Any) -> R:
        method = self._cases.get(type(e))
        if method is None:  # a subclass of an expression class: its nearest base's case
            method = next((self._cases[c] for c in type(e).__mro__ if c in self._cases), type(self).visit_other)
        return method(self, e, *context)

    def visit_other(self, e: Expr, *context: Any) -> R:
        raise TypeError(f"{type(self).__name__} has no case for {type(e).__name__}: {e}")
