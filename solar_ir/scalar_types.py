"""Types of scalar expressions inside kernel and einsum bodies: literals take the element type of what they
meet, operands of one operation share one element type, functions check their arity and operand kinds."""

from __future__ import annotations

from . import expr as ex
from .dtypes import INDEX, DType
from .expr import COMPARISONS, LOGICAL, Expr
from .expr_visitor import ExprVisitor
from .scalar_funcs import ALL_FUNCTION_NAMES, FUNCTIONS
from .verify_base import BOOL_LIT, FLOAT_LIT, INT_LIT, Checker, EType, KernelScope, literal_fits, suggest, type_name


class ScalarTypes(Checker, ExprVisitor[EType]):
    """The verifier's typing of scalar expressions (mixed into `Verifier`)."""

    def access(self, acc: ex.Access, scope: KernelScope) -> DType | None:
        t = scope.tensors.get(acc.tensor)
        if t is None:
            if acc.tensor not in scope.tensors:
                self.error(f"unknown tensor {acc.tensor}{suggest(acc.tensor, scope.tensors)}", acc.loc)
            return None
        if len(acc.indices) != t.rank:
            self.error(f"{acc.tensor} has rank {t.rank} but is indexed with {len(acc.indices)} "
                       f"{'index' if len(acc.indices) == 1 else 'indices'}", acc.loc)
        for idx in acc.indices:
            self.check_affine(idx, scope.indices, idx.loc, f"an index of {acc.tensor}")
        return t.dtype

    # ---- scalar expression types -----------------------------------------------------------------
    # The type of a scalar expression: the dispatch itself, so that a nested expression costs two frames a
    # level (the limits of solar.ir.limits leave room for that many).
    etype = ExprVisitor.visit

    def visit_int_lit(self, e: ex.IntLit, scope: KernelScope) -> EType:
        return INT_LIT

    def visit_float_lit(self, e: ex.FloatLit, scope: KernelScope) -> EType:
        return FLOAT_LIT

    def visit_bool_lit(self, e: ex.BoolLit, scope: KernelScope) -> EType:
        return BOOL_LIT

    def visit_index_ref(self, e: ex.IndexRef, scope: KernelScope) -> EType:
        if e.name not in scope.indices:
            self.error(f"unknown loop index %{e.name}{suggest(e.name, scope.indices)}", e.loc)
            return None
        return INDEX

    def visit_name_ref(self, e: ex.NameRef, scope: KernelScope) -> EType:
        if e.name in scope.elements:
            return scope.elements[e.name]
        if e.name in self.params:
            return INDEX
        if e.name in scope.tensors:
            self.error(f"tensor {e.name} needs indices: {e.name}[...]", e.loc)
            return None
        self.error(f"unknown name {e.name}{suggest(e.name, [*scope.elements, *self.params, *scope.tensors])}",
                   e.loc)
        return None

    def visit_access(self, e: ex.Access, scope: KernelScope) -> EType:
        if e.tensor in scope.elements:
            self.error(f"einsum operands are read by name alone (`{e.tensor}`); the subscripts give the indices",
                       e.loc)
            return None
        return self.access(e, scope)

    def visit_cast(self, e: ex.Cast, scope: KernelScope) -> EType:
        self.etype(e.operand, scope)
        return e.dtype

    def visit_unary(self, e: ex.Unary, scope: KernelScope) -> EType:
        t = self.etype(e.operand, scope)
        if e.op == "not":
            return self.expect_bool(t, e.operand, "not")
        if t is not None and (t == BOOL_LIT or (isinstance(t, DType) and t.is_bool)):
            self.error("cannot negate a boolean; use not", e.loc)
            return None
        return t

    def expect_bool(self, t: EType, e: Expr, what: str) -> EType:
        if t is None:
            return None
        if t == BOOL_LIT or t == DType.I1:
            return DType.I1
        self.error(f"{what} needs an i1 operand, not {type_name(t)}", e.loc)
        return None

    def visit_binary(self, e: ex.Binary, scope: KernelScope) -> EType:
        lt, rt = self.etype(e.lhs, scope), self.etype(e.rhs, scope)
        if e.op in LOGICAL:
            a, b = self.expect_bool(lt, e.lhs, e.op), self.expect_bool(rt, e.rhs, e.op)
            return DType.I1 if a and b else None
        t = self.unify(lt, rt, e)
        if t is None:
            return None
        if e.op in COMPARISONS:
            return DType.I1
        is_float = t == FLOAT_LIT or (isinstance(t, DType) and t.is_float)
        is_bool = t == BOOL_LIT or (isinstance(t, DType) and t.is_bool)
        if is_bool:
            self.error(f"`{e.op}` is not defined on i1 values; use and, or, not or select", e.loc)
            return None
        if e.op == "/" and not is_float:
            self.error(f"`/` on {type_name(t)} values: use floordiv for integers or cast to a float type", e.loc)
            return None
        if e.op in ("floordiv", "ceildiv", "mod") and is_float:
            self.error(f"`{e.op}` needs integer operands, not {type_name(t)}", e.loc)
            return None
        return t

    def unify(self, a: EType, b: EType, e: Expr) -> EType:
        if a is None or b is None:
            return None
        if a == b:
            return a
        if isinstance(a, DType) and isinstance(b, DType):
            self.error(f"operands of different element types {a} and {b}; convert one with cast<{a}>(...)", e.loc)
            return None
        if isinstance(a, str) and isinstance(b, str):
            if BOOL_LIT in (a, b):
                self.error(f"cannot combine a {a} and a {b}", e.loc)
                return None
            return FLOAT_LIT
        dtype, lit = (a, b) if isinstance(a, DType) else (b, a)
        assert isinstance(dtype, DType) and isinstance(lit, str)
        if literal_fits(lit, dtype):
            return dtype
        self.error(f"a {lit} cannot be combined with {dtype} values", e.loc)
        return None

    def visit_call(self, e: ex.Call, scope: KernelScope) -> EType:
        types = [self.etype(a, scope) for a in e.args]
        if e.func == "select":
            if len(e.args) != 3:
                self.error(f"select takes 3 arguments (condition, if true, if false), not {len(e.args)}", e.loc)
                return None
            self.expect_bool(types[0], e.args[0], "select's condition")
            return self.unify(types[1], types[2], e)
        fn = FUNCTIONS.get(e.func)
        if fn is None:
            self.error(f"unknown function {e.func}{suggest(e.func, ALL_FUNCTION_NAMES)}", e.loc)
            return None
        if len(e.args) != fn.arity:
            self.error(f"{e.func} takes {fn.arity} argument{'s' if fn.arity > 1 else ''}, not {len(e.args)}", e.loc)
            return None
        t = types[0]
        for other, arg in zip(types[1:], e.args[1:], strict=True):
            t = self.unify(t, other, arg)
        if t is None:
            return None
        is_float = t == FLOAT_LIT or (isinstance(t, DType) and t.is_float)
        if fn.floats_only and not is_float:
            self.error(f"{e.func} needs a float operand, not {type_name(t)}; convert with cast<f32>(...)", e.loc)
            return None
        return DType.I1 if fn.returns_bool else t
