"""The backend hooks of the composition ops (constant, slice, insert and the shape ops): how the executor
runs each with NumPy, and the DRAM bytes the cost model charges where they differ from whole tensors. A new
composition op registers its hooks here (see backends/op_hooks.py and docs/writing-an-op.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import islpy as isl

from solar.ir.analysis.formula import Number, fmin
from solar.ir.analysis.index_values import IndexValues
from solar.ir.analysis.isl_model import evaluate
from solar.ir.diagnostics import Location
from solar.ir.expr_values import evaluate_int
from solar.ir.lazy_modules import LazyModule
from solar.ir.ops import (
    BroadcastOp,
    ConcatOp,
    ConstantOp,
    FlipOp,
    GatherOp,
    GenericOp,
    InsertOp,
    Op,
    PermuteOp,
    ReshapeOp,
    RollOp,
    ScatterOp,
    SliceEntry,
    SliceOp,
    SortOp,
    TopkOp,
    Value,
    Word,
)

from .errors import RuntimeBoundsError
from .op_hooks import CostQueries, Env, HookSet, Runner

if TYPE_CHECKING:
    import numpy as np

    from . import dtypes
else:  # running programs only (solar-run, validation): pricing never imports numpy for these hooks
    np = LazyModule("numpy")
    dtypes = LazyModule("solar.backends.dtypes")

HOOKS = HookSet("the composition ops")  # installed by the executor and the cost model



# ---- running them --------------------------------------------------------------------------------


@HOOKS.execute(ConstantOp)
def _run_constant(program: Runner, op: ConstantOp, env: Env, idx: dict[str, int]) -> list[np.ndarray]:
    return [_constant(op)]


@HOOKS.execute(SliceOp)
def _run_slice(program: Runner, op: SliceOp, env: Env, idx: dict[str, int]) -> list[np.ndarray]:
    src = env[op.source]
    return [src[_slices(op, op.entries, src.shape, idx)]]


@HOOKS.execute(InsertOp)
def _run_insert(program: Runner, op: InsertOp, env: Env, idx: dict[str, int]) -> list[np.ndarray]:
    dest = np.array(env[op.dest], copy=True)
    dest[_slices(op, op.entries, dest.shape, idx)] = env[op.value]
    return [dest]


@HOOKS.execute(ReshapeOp)
def _run_reshape(program: Runner, op: ReshapeOp, env: Env, idx: dict[str, int]) -> list[np.ndarray]:
    return [env[op.args[0]].reshape(op.result_types[0].concrete_shape())]


@HOOKS.execute(PermuteOp)
def _run_permute(program: Runner, op: PermuteOp, env: Env, idx: dict[str, int]) -> list[np.ndarray]:
    return [env[op.args[0]].transpose(op.attrs["perm"])]


@HOOKS.execute(FlipOp)
def _run_flip(program: Runner, op: FlipOp, env: Env, idx: dict[str, int]) -> list[np.ndarray]:
    return [np.flip(env[op.args[0]], axis=tuple(op.attrs["dims"]))]


@HOOKS.execute(RollOp)
def _run_roll(program: Runner, op: RollOp, env: Env, idx: dict[str, int]) -> list[np.ndarray]:
    return [np.roll(env[op.args[0]], tuple(op.attrs["shifts"]), axis=tuple(op.attrs["dims"]))]


@HOOKS.execute(ConcatOp)
def _run_concat(program: Runner, op: ConcatOp, env: Env, idx: dict[str, int]) -> list[np.ndarray]:
    return [np.concatenate([env[a] for a in op.args], axis=op.attrs["axis"])]


@HOOKS.execute(BroadcastOp)
def _run_broadcast(program: Runner, op: BroadcastOp, env: Env, idx: dict[str, int]) -> list[np.ndarray]:
    shape = op.result_types[0].concrete_shape()
    src = env[op.args[0]]
    expanded = [1] * len(shape)
    for i, d in enumerate(op.attrs["dims"]):
        expanded[d] = src.shape[i]
    return [np.broadcast_to(src.reshape(expanded), shape)]


@HOOKS.execute(GatherOp)
def _run_gather(program: Runner, op: GatherOp, env: Env, idx: dict[str, int]) -> list[np.ndarray]:
    return [_gather(op, env[op.args[0]], env[op.args[1]])]


@HOOKS.execute(ScatterOp)
def _run_scatter(program: Runner, op: ScatterOp, env: Env, idx: dict[str, int]) -> list[np.ndarray]:
    return [_scatter(op, env[op.args[0]], env[op.args[1]], env[op.args[2]])]


def _constant(op: ConstantOp) -> np.ndarray:
    shape = op.type.concrete_shape()
    dt = op.type.dtype
    if isinstance(op.value, list):
        wide = np.array(op.value, dtype=np.float64 if dt.is_float else dtypes.STORAGE[dt])
        return dtypes.to_storage(wide.astype(np.float32) if dt in dtypes.FORMATS else wide, dt).reshape(shape)
    if dt in dtypes.FORMATS:
        return dtypes.to_storage(np.full(shape, op.value, np.float32), dt)
    return np.full(shape, op.value, dtypes.STORAGE[dt])


def _slices(op: Op, entries: list[SliceEntry], shape: tuple[int, ...], idx: dict[str, int]) -> tuple[Any, ...]:
    """NumPy indices for a slice or insert, checking every bound (NumPy would clip a range silently)."""
    scope = {"%" + k: v for k, v in idx.items()}
    out: list[Any] = []
    for d, (e, size) in enumerate(zip(entries, shape, strict=True)):
        if e.index is not None:
            i = evaluate_int(e.index, scope)
            if not 0 <= i < size:
                raise RuntimeBoundsError(f"{op.opname} at {op.loc}: index {i} in dimension {d} is outside "
                                         f"[0, {size})", op.loc)
            out.append(i)
            continue
        start = evaluate_int(e.start, scope) if e.start is not None else 0
        stop = evaluate_int(e.stop, scope) if e.stop is not None else size
        step = evaluate_int(e.step, scope) if e.step is not None else 1
        if not (0 <= start <= stop <= size):
            raise RuntimeBoundsError(f"{op.opname} at {op.loc}: range {start}:{stop} in dimension {d} is outside "
                                     f"[0, {size}]", op.loc)
        out.append(slice(start, stop, step))
    return tuple(out)


def _check_indices(op: GenericOp, idx: np.ndarray, size: int, axis: int) -> None:
    bad = (idx < 0) | (idx >= size)
    if bad.any():
        pos = tuple(int(p) for p in np.argwhere(bad)[0])
        value = int(idx[pos])
        where = f" at position {list(pos)}" if idx.ndim else ""
        raise RuntimeBoundsError(f"{op.opname} at {_loc(op.loc)}: index {value}{where} of %{op.args[1].name} is out "
                                 f"of range for axis {axis} of size {size}", op.loc)


def _loc(loc: Location) -> str:
    return str(loc)


def _gather(op: GenericOp, table: np.ndarray, idx: np.ndarray) -> np.ndarray:
    axis = op.attrs["axis"]
    _check_indices(op, idx, table.shape[axis], axis)
    return np.take(table, idx, axis=axis)


def _scatter(op: GenericOp, dest: np.ndarray, idx: np.ndarray, src: np.ndarray) -> np.ndarray:
    axis = op.attrs["axis"]
    reduce = op.attrs.get("reduce", Word("none"))
    kind = reduce.name if isinstance(reduce, Word) else str(reduce)
    _check_indices(op, idx, dest.shape[axis], axis)
    t = op.result_types[0]
    # Work in the compute dtype with the scattered axis first: dest (n, pre, post), src (m, pre, post).
    work = np.moveaxis(np.array(dtypes.to_compute(dest, t.dtype), copy=True), axis, 0)
    pre = dest.shape[:axis]
    post = dest.shape[axis + 1:]
    flat_idx = idx.reshape(-1)
    s = dtypes.to_compute(src, t.dtype).reshape((*pre, flat_idx.size, *post))
    s = np.moveaxis(s, axis, 0)
    if kind == "none":
        # A repeated index keeps the last value stored, as a sequential loop would.
        reversed_first = np.unique(flat_idx[::-1], return_index=True)[1]
        last = flat_idx.size - 1 - reversed_first
        work[flat_idx[last]] = s[last]
    else:
        ufunc = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}[kind]
        ufunc.at(work, flat_idx, s)
    return dtypes.to_storage(np.moveaxis(work, 0, axis), t.dtype)


# ---- what they move ------------------------------------------------------------------------------


@HOOKS.read_bytes(GatherOp)
def _gather_reads(model: CostQueries, op: GatherOp, v: Value, full: int, loops: dict) -> int:
    # A gather reads of its table only the rows it picks: at most as many bytes as it produces, and no more
    # rows than its ids must name apart (docs/counts.md, "Gathers").
    if v is not op.args[0]:
        return full
    picked = fmin(full, model.nbytes(op.results[0]))
    table, axis = v.type, op.attrs["axis"]
    if table is None:
        return picked
    # One row's bytes from its own shape, so a symbolic row count (a sweep's formulas) prices as a bound one.
    row = table.with_shape(tuple(1 if k == axis else d for k, d in enumerate(table.shape)))
    return fmin(picked, least_distinct_ids(model, op.args[1]) * row.nbytes(model.values))


def least_distinct_ids(model: CostQueries, index: Value) -> Number:
    """How many distinct ids `index` must hold, at least, for every input: `known_distinct_ids` where the
    program fixes it, and one for ids that are data, which may all repeat (padding tokens, an embedding
    bag). A gather with no ids reads nothing, which the bytes it produces already cap."""
    known = known_distinct_ids(model, index)
    return 1 if known is None else known


def known_distinct_ids(model: CostQueries, index: Value) -> Number | None:
    """The distinct ids `index` holds for every input where the program fixes it: k for the indices of a
    top-k (experts a router picks: any routing may send every token to the same k) and for their sorted values
    (grouped experts, frontends/torch_grouped_experts.py), n for those of a sort
    along an axis of n (each line is a permutation), the size of the image for ids that are a function of
    their positions (`index_values`); None for ids that are data."""
    # Through the views that keep every element (a slice of a sort's indices may name only a few rows).
    while isinstance(index.owner, ReshapeOp | PermuteOp | BroadcastOp):
        index = index.owner.operands[0]
    owner = index.owner
    if isinstance(owner, TopkOp) and index is owner.results[-1]:
        k = owner.attrs.get("k")
        return k if isinstance(k, int) else 1
    if type(owner) is SortOp and index is owner.results[0] and owner.operands:
        return known_distinct_ids(model, owner.operands[0])  # sorted values: the same ids, reordered
    if isinstance(owner, SortOp) and index is owner.results[-1] and owner.operands:
        source = owner.operands[0].type
        line = source.shape[owner.attrs["axis"]] if source is not None and source.rank else 1
        return line if isinstance(line, int) else 1
    values = IndexValues(model.params)
    ids = values.of(index)
    if isinstance(ids, isl.PwAff) and index.type is not None:
        image = isl.Map.from_pw_aff(ids.intersect_domain(values.box(index.type.shape))).range()
        distinct = evaluate(image.card(), model.values)
        if distinct is not None:
            return distinct
    return None


@HOOKS.read_bytes(ScatterOp)
def _scatter_reads(model: CostQueries, op: ScatterOp, v: Value, full: int, loops: dict) -> int:
    # The destination is read where the source lands (updated in place): at most the source's bytes.
    return fmin(full, model.nbytes(op.args[2])) if v is op.args[0] else full


@HOOKS.write_bytes(ScatterOp)
def _scatter_writes(model: CostQueries, op: ScatterOp, v: Value, loops: dict) -> int:
    return fmin(model.nbytes(v), model.nbytes(op.args[2]))


@HOOKS.read_bytes(InsertOp)
def _insert_reads(model: CostQueries, op: InsertOp, v: Value, full: int, loops: dict) -> int:
    return 0 if v is op.dest else full  # the destination is updated in place


@HOOKS.write_bytes(InsertOp)
def _insert_writes(model: CostQueries, op: InsertOp, v: Value, loops: dict) -> int:
    return model.nbytes(op.value)


# A concat with `append = true` appends its later operands to its first in place, as a serving engine
# appends a token's keys and values to a KV cache allocated with room for them: the first operand is
# not copied, and only the appended elements are written; readers of the result read the buffer through
# it as through a view (the cost model's _read_bytes). docs/ir.md, "Attributes".
APPEND = "append"


def is_append(op: Op) -> bool:
    return isinstance(op, ConcatOp) and op.attrs.get(APPEND) is True


# A scatter with `in_place = true` stores its source into its destination where it lands, as a serving
# engine writes a token's keys and values into a static KV cache at the cache position: the destination is
# not copied and only the source is written; readers of the result read the buffer through it, less what
# the scatter itself wrote there (docs/ir.md).
IN_PLACE = "in_place"


def is_in_place_scatter(op: Op) -> bool:
    return isinstance(op, ScatterOp) and op.attrs.get(IN_PLACE) is True


def updates_in_place(op: Op) -> bool:
    """The op writes into its first operand's buffer (an append, an in-place scatter)."""
    return is_append(op) or is_in_place_scatter(op)


@HOOKS.write_bytes(ConcatOp)
def _concat_writes(model: CostQueries, op: ConcatOp, v: Value, loops: dict) -> int:
    if is_append(op):
        return sum((model.nbytes(a) for a in op.args[1:]), 0)
    return model.nbytes(v)
