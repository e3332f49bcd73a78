"""Whole-module rewriting helpers shared by passes: mapping every type and expression, replacing uses.
Each op maps the types and expressions it holds itself (`Op.map_types`, `Op.map_exprs`)."""

from __future__ import annotations

from collections.abc import Iterator

from .expr import Expr, IntLit, substitute_names
from .ops import ExprFn, FuncOp, ModuleOp, Op, TypeFn, Value
from .rewriter import replace_all_uses_with
from .types import TensorType, canonical_dim

__all__ = ["ExprFn", "TypeFn", "defined_values", "map_exprs", "map_types", "replace_uses", "substitute_params"]


def defined_values(func: FuncOp) -> Iterator[Value]:
    """Every value a function defines: arguments, op results and loop iteration arguments."""
    yield from func.args
    for op in func.walk():
        yield from op.results
        if op is not func:
            yield from op.block_args


def map_types(module: ModuleOp, fn: TypeFn) -> None:
    """Applies `fn` to every type: values, declared results, kernel outputs and locals."""
    for func in module.funcs:
        for v in defined_values(func):
            if v.type is not None:
                v.type = fn(v.type)
        for op in func.walk():
            op.map_types(fn)


def map_exprs(module: ModuleOp, fn: ExprFn) -> None:
    """Applies `fn` to every expression: loop bounds, guards, indices, values and slice entries."""
    for op in module.walk():
        op.map_exprs(fn)


def substitute_params(module: ModuleOp, values: dict[str, int]) -> None:
    """Replaces size parameters by integers everywhere in `module`."""
    literals: dict[str, Expr] = {k: IntLit(v) for k, v in values.items()}

    def on_type(t: TensorType) -> TensorType:
        if t.is_static:
            return t
        return t.with_shape(tuple(d if isinstance(d, int) else canonical_dim(substitute_names(d, literals))
                                  for d in t.shape))

    map_types(module, on_type)
    map_exprs(module, lambda e: substitute_names(e, literals))


def replace_uses(ops: list[Op], old: Value, new: Value) -> None:
    """Makes every use of `old` in `ops` (and nested regions) a use of `new` (`replace_all_uses_with`)."""
    replace_all_uses_with(old, new, ops)
