"""Running the data-dependent ops (solar.ir.ops) with NumPy: sorts, selections, cumulative extremes,
nonzero and masked select. Semantics: docs/ir.md, "Data-dependent operations".

Values are ordered in their compute type (narrow floats as f32), NaN above every number; sorts are stable.
Results are returned in their storage types.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np

from solar.ir.analysis.counts import Counts
from solar.ir.analysis.formula import fmin
from solar.ir.analysis.selection_counts import read_bytes, selection_counts, write_bytes
from solar.ir.ops import (
    ArgsortOp,
    CummaxOp,
    CumminOp,
    KthvalueOp,
    MaskedSelectOp,
    NonzeroOp,
    SelectionOp,
    SortOp,
    TopkOp,
    Value,
)

from .dtypes import STORAGE, to_compute, to_storage
from .op_hooks import CostQueries, Env, HookSet, Runner

HOOKS = HookSet("the data-dependent ops")  # installed by the executor and the cost model

ArrayRunner = Callable[[SelectionOp, list[np.ndarray]], list[np.ndarray]]


def run_selection(op: SelectionOp, args: list[np.ndarray]) -> list[np.ndarray]:
    """The results of one data-dependent op on NumPy arrays, in the op's declared storage types."""
    return _RUNNERS[op.opname](op, args)


@HOOKS.execute(SelectionOp)
def _run(program: Runner, op: SelectionOp, env: Env, idx: dict[str, int]) -> list[np.ndarray]:
    return run_selection(op, [env[a] for a in op.args])


@HOOKS.counts(SelectionOp)
def _counts(model: CostQueries, op: SelectionOp, loops: dict) -> Counts:
    """Comparisons, at least, as vector work (docs/counts.md, "Data-dependent ops")."""
    n = selection_counts(op, model.values).comparisons
    return Counts(flops_vector=n, ops=Counter({"cmp": n}))


@HOOKS.read_bytes(SelectionOp)
def _reads(model: CostQueries, op: SelectionOp, v: Value, full: int, loops: dict) -> int:
    return fmin(full, read_bytes(op, v, model.values))


@HOOKS.write_bytes(SelectionOp)
def _writes(model: CostQueries, op: SelectionOp, v: Value, loops: dict) -> int:
    return write_bytes(op, v, model.values)


def _order(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable sorting indices along `axis`: ascending, or descending with equal elements in their order."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    flipped = np.flip(x, axis=axis)
    # Sorting the reversed line ascending and reading it backwards keeps equal elements in order.
    return (n - 1) - np.flip(np.argsort(flipped, axis=axis, kind="stable"), axis=axis)


def _index(op: SelectionOp, k: int, idx: np.ndarray) -> np.ndarray:
    return idx.astype(STORAGE[op.result_types[k].dtype])


def _sort(op: SelectionOp, args: list[np.ndarray]) -> list[np.ndarray]:
    axis = op.attrs["axis"]
    x = args[0]
    order = _order(to_compute(x, op.args[0].type.dtype), axis, bool(op.attrs.get("descending", False)))
    if isinstance(op, ArgsortOp):
        return [_index(op, 0, order)]
    return [np.take_along_axis(x, order, axis=axis), _index(op, 1, order)]


def _topk(op: SelectionOp, args: list[np.ndarray]) -> list[np.ndarray]:
    axis, k = op.attrs["axis"], op.attrs["k"]
    x = args[0]
    order = _order(to_compute(x, op.args[0].type.dtype), axis, bool(op.attrs.get("largest", True)))
    first = np.take(order, np.arange(k), axis=axis)
    return [np.take_along_axis(x, first, axis=axis), _index(op, 1, first)]


def _kthvalue(op: SelectionOp, args: list[np.ndarray]) -> list[np.ndarray]:
    axis, k = op.attrs["axis"], op.attrs["k"]
    x = args[0]
    order = _order(to_compute(x, op.args[0].type.dtype), axis, False)
    at = np.take(order, [k - 1], axis=axis)
    values = np.take_along_axis(x, at, axis=axis)
    return [np.squeeze(values, axis=axis), _index(op, 1, np.squeeze(at, axis=axis))]


def _cumulative(op: SelectionOp, args: list[np.ndarray]) -> list[np.ndarray]:
    """Running extreme and where it was last reached: an element takes over when it is at least as large
    (small) as the running value, or NaN (NaN propagates, as in the frameworks)."""
    axis = op.attrs["axis"]
    reverse = bool(op.attrs.get("reverse", False))
    wide = np.moveaxis(to_compute(args[0], op.args[0].type.dtype), axis, -1)
    if reverse:
        wide = wide[..., ::-1]
    takes_over = np.less_equal if isinstance(op, CumminOp) else np.greater_equal
    values = np.empty_like(wide)
    at = np.empty(wide.shape, np.int64)
    best = wide[..., 0].copy()
    where = np.zeros(best.shape, np.int64)
    for r in range(wide.shape[-1]):
        cur = wide[..., r]
        take = takes_over(cur, best) | np.isnan(cur)
        best = np.where(take, cur, best)
        where = np.where(take, r, where)
        values[..., r] = best
        at[..., r] = where
    if reverse:  # back in place; an index counts from the start of the line
        values, at = values[..., ::-1], (wide.shape[-1] - 1) - at[..., ::-1]
    out = [to_storage(np.moveaxis(values, -1, axis), op.result_types[0].dtype)]
    if len(op.result_types) > 1:
        out.append(_index(op, 1, np.moveaxis(at, -1, axis)))
    return out


def _nonzero(op: SelectionOp, args: list[np.ndarray]) -> list[np.ndarray]:
    x = args[0]
    coords = np.argwhere(x != 0)
    bound = op.result_types[0].concrete_shape()[0]
    return [_bounded(op, coords, bound, int(op.attrs.get("fill", 0))), np.asarray(min(len(coords), bound), np.int64)]


def _masked_select(op: SelectionOp, args: list[np.ndarray]) -> list[np.ndarray]:
    x, mask = args
    rows = x.reshape((-1, *x.shape[mask.ndim:]))[mask.reshape(-1)]
    bound = op.result_types[0].concrete_shape()[0]
    return [_bounded(op, rows, bound, op.attrs.get("fill", 0)), np.asarray(min(len(rows), bound), np.int64)]


def _bounded(op: SelectionOp, rows: np.ndarray, bound: int, fill: int | float) -> np.ndarray:
    """The first `bound` rows, the rest of the bound `fill` (pad = true) or 0."""
    t = op.result_types[0]
    out = np.full(t.concrete_shape(), fill if op.attrs.get("pad", False) else 0, STORAGE[t.dtype])
    kept = rows[:bound]
    out[:len(kept)] = kept
    return out


_RUNNERS: dict[str, ArrayRunner] = {
    SortOp.opname: _sort, ArgsortOp.opname: _sort, TopkOp.opname: _topk, KthvalueOp.opname: _kthvalue,
    CummaxOp.opname: _cumulative, CumminOp.opname: _cumulative, NonzeroOp.opname: _nonzero,
    MaskedSelectOp.opname: _masked_select,
}
