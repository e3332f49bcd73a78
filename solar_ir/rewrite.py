"""Whole-module rewriting helpers shared by passes: mapping every type and expression, replacing uses."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from .expr import Expr, IntLit, substitute_names
from .ops import (
    AffineFor,
    AffineIf,
    Assign,
    CallOp,
    ConstantOp,
    EinsumOp,
    ForOp,
    FuncOp,
    GenericOp,
    GroupOp,
    IfOp,
    InsertOp,
    KernelOp,
    KStmt,
    LocalDecl,
    ModuleOp,
    Op,
    SliceEntry,
    SliceOp,
    Value,
    walk_stmts,
)
from .rewriter import replace_all_uses_with
from .types import TensorType, canonical_dim

TypeFn = Callable[[TensorType], TensorType]
ExprFn = Callable[[Expr], Expr]


def defined_values(func: FuncOp) -> Iterator[Value]:
    """Every value a function defines: arguments, op results and loop iteration arguments."""
    yield from func.args
    for op in func.walk():
        yield from op.results
        if isinstance(op, ForOp):
            yield from op.iter_args


def map_types(module: ModuleOp, fn: TypeFn) -> None:
    for func in module.funcs:
        for v in defined_values(func):
            if v.type is not None:
                v.type = fn(v.type)
        func.result_types = [fn(t) for t in func.result_types]
        for op in func.walk():
            _map_op_types(op, fn)


def _map_op_types(op: Op, fn: TypeFn) -> None:
    if isinstance(op, KernelOp | EinsumOp):
        for d in op.outputs:
            d.type = fn(d.type)
        if isinstance(op, KernelOp):
            for s in walk_stmts(op.body):
                if isinstance(s, LocalDecl):
                    s.decl.type = fn(s.decl.type)
    elif isinstance(op, ConstantOp | SliceOp | InsertOp):
        op.type = fn(op.type)
    elif isinstance(op, GroupOp | ForOp | IfOp | GenericOp | CallOp):
        op.result_types = [fn(t) for t in op.result_types]


def map_exprs(module: ModuleOp, fn: ExprFn) -> None:
    """Applies `fn` to every expression: loop bounds, guards, indices, values and slice entries."""
    for op in module.walk():
        if isinstance(op, KernelOp):
            _map_stmts(op.body, fn)
        elif isinstance(op, EinsumOp):
            for s in op.body:
                s.value = fn(s.value)
        elif isinstance(op, ForOp):
            op.lower, op.upper = fn(op.lower), fn(op.upper)
        elif isinstance(op, SliceOp | InsertOp):
            op.entries = [_map_entry(e, fn) for e in op.entries]


def _map_entry(e: SliceEntry, fn: ExprFn) -> SliceEntry:
    def f(x: Expr | None) -> Expr | None:
        return fn(x) if x is not None else None

    return SliceEntry(f(e.index), f(e.start), f(e.stop), f(e.step), e.loc)


def _map_stmts(body: list[KStmt], fn: ExprFn) -> None:
    for s in body:
        if isinstance(s, AffineFor):
            s.lower, s.upper = fn(s.lower), fn(s.upper)
            _map_stmts(s.body, fn)
        elif isinstance(s, AffineIf):
            s.cond = fn(s.cond)
            _map_stmts(s.body, fn)
        elif isinstance(s, Assign):
            target = fn(s.target)
            assert hasattr(target, "tensor"), "an assignment target must stay a tensor access"
            s.target = target  # type: ignore[assignment]
            s.value = fn(s.value)


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
