"""What a reader inside `solar.for` loops reads over all their iterations, for the whole-graph reads of
backends/cost.py (`CostModel._over_runs`). One iteration's footprint times the trip count counts an element
again at every iteration that reads it again: a lower bound of the distinct elements only where the
iterations read disjoint elements. These helpers prove that (a slice at a loop index that moves past its
own extent) or count the union outright (a kernel's accesses, with ISL)."""

from __future__ import annotations

from collections.abc import Mapping

import islpy as isl

from solar.ir.analysis.formula import Number, fmax
from solar.ir.analysis.isl_model import UnsupportedForISL, build_model, evaluate
from solar.ir.expr import Expr, IndexRef, walk
from solar.ir.expr_values import evaluate_int
from solar.ir.ops import ForOp, KernelOp, SliceOp, Value


def _shift(e: Expr, var: str, others: Mapping[str, Number]) -> int | None:
    """How far `e` moves per step of `%var` (other loop indices held at 0), or None when it is not a whole
    number or not affine in `%var`."""
    env: dict = {**others, "%" + var: 0}
    try:
        at = [evaluate_int(e, {**env, "%" + var: k}) for k in range(3)]
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    if not all(isinstance(a, int) for a in at) or at[2] - at[1] != at[1] - at[0]:
        return None
    return at[1] - at[0]


def slice_mentions(op: SliceOp, var: str | None = None) -> bool:
    """Whether a slice's entries use the solar.for index `%var` (any solar.for index when None)."""
    exprs = [x for e in op.entries for x in (e.index, e.start, e.stop, e.step) if x is not None]
    return any(isinstance(i, IndexRef) and (var is None or i.name == var) for x in exprs for i in walk(x))


def slice_disjoint_over(op: SliceOp, loop: ForOp, values: Mapping[str, Number], loop_vars: list[str]) -> bool:
    """Whether the slices `op` takes at different iterations of `loop` share no element: one entry moves
    with the loop's index by at least the span it covers (an index entry: by anything but 0)."""
    others = {**values, **{"%" + v: 0 for v in loop_vars}}
    result_type = op.results[0].type
    assert result_type is not None
    dim = 0  # the result dim of the next range entry
    for e in op.entries:
        if e.index is not None:
            step = _shift(e.index, loop.var, others)
            if step:
                return True
            continue
        size = result_type.shape[dim]
        dim += 1
        if e.start is None:
            continue
        shift = _shift(e.start, loop.var, others)
        stride = _shift(e.step, loop.var, others) if e.step is not None else 0
        try:
            stride_value = evaluate_int(e.step, others) if e.step is not None else 1
            extent = size if isinstance(size, int) else evaluate_int(size, others)
        except (KeyError, TypeError, ValueError):
            continue
        if shift is None or stride != 0 or not isinstance(stride_value, int) or not isinstance(extent, int):
            continue
        if extent and abs(shift) >= (extent - 1) * abs(stride_value) + 1:
            return True
    return False


def kernel_union_bytes(op: KernelOp, v: Value, params: list[str], values: Mapping[str, Number],
                       loops: dict) -> tuple[Number, set[str]] | None:
    """The distinct bytes of `v` the kernel reads over every iteration of the solar.for loops it uses (the
    union of the footprints, each element once) and those loops' indices, or None when it uses none or ISL
    cannot count it."""
    try:
        model = build_model(op, params, loops)
    except UnsupportedForISL:
        return None
    if not model.loop_params or v.type is None:
        return None
    used = {var for var in loops if model.names.get("%" + var) in model.loop_params}
    best: Number | None = None
    for b in op.inputs:
        if b.value is not v:
            continue
        fp = model.footprint(b.name)
        if fp is None:
            continue
        fp = fp.intersect_params(model.context)
        rank = fp.dim(isl.dim_type.set)
        # The solar.for indices become dimensions of the set, which are then projected away: the union.
        for name in model.loop_params:
            pos = fp.find_dim_by_name(isl.dim_type.param, name)
            fp = fp.move_dims(isl.dim_type.set, fp.dim(isl.dim_type.set), isl.dim_type.param, pos, 1)
        fp = fp.project_out(isl.dim_type.set, rank, len(model.loop_params))
        n = evaluate(fp.card(), values)
        if n is None:
            return None
        size = v.type.dtype.bytes_of(n)
        best = size if best is None else fmax(best, size)
    return None if best is None else (best, used)
