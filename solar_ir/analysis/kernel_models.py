"""Walks that give every kernel its ISL model: each op with the solar.for loops around it, and each kernel
with its `KernelModel` (or why it has none). Shared by --lift-affine, --print-counts and the tests."""

from __future__ import annotations

from collections.abc import Iterator

from solar.ir.analysis.isl_model import KernelModel, UnsupportedForISL, build_model
from solar.ir.expr import Expr
from solar.ir.ops import ForOp, FuncOp, KernelOp, ModuleOp, Op


def ops_with_loops(func: FuncOp) -> Iterator[tuple[Op, dict[str, tuple[Expr, Expr]]]]:
    """Every op of `func`, nested ones included, with the bounds of the solar.for loops around it (outermost
    first)."""

    def visit(ops: list[Op], loops: dict[str, tuple[Expr, Expr]]) -> Iterator[tuple[Op, dict]]:
        for op in ops:
            yield op, loops
            inner = {**loops, op.var: (op.lower, op.upper)} if isinstance(op, ForOp) else loops
            for region in op.regions:
                yield from visit(region, inner)

    yield from visit(func.body, {})


def kernels_with_loops(func: FuncOp) -> Iterator[tuple[KernelOp, dict[str, tuple[Expr, Expr]]]]:
    """Every kernel of `func`, with the bounds of the solar.for loops around it."""
    return ((op, loops) for op, loops in ops_with_loops(func) if isinstance(op, KernelOp))


def model_kernels(module: ModuleOp, all_loops: bool = False
                  ) -> Iterator[tuple[KernelOp, KernelModel | UnsupportedForISL]]:
    """Every kernel with its ISL model (see `build_model` for `all_loops`), or why it has none."""
    params = [p.name for p in module.params]
    for func in module.funcs:
        for kernel, loops in kernels_with_loops(func):
            try:
                yield kernel, build_model(kernel, params, loops, all_loops)
            except UnsupportedForISL as err:
                yield kernel, err
