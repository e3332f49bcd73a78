"""Inputs and outputs of a run: seeded random inputs that respect index ranges, `.npz` files, comparisons.

Outputs are named `out0`, `out1`, ... in `solar.return` order, in `.npz` files and in comparisons.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from solar.ir.dtypes import DType
from solar.ir.ops import CallOp, FuncOp, ModuleOp, Value
from solar.ir.outputs import OutputError, atomic_open

from .dtypes import FORMATS, Tolerance, default_tolerance, to_storage
from .errors import InputError
from .executor import Program

DEFAULT_INT_HIGH = 16  # integer inputs that index nothing are drawn from [0, 16)


def output_names(count: int) -> list[str]:
    return [f"out{k}" for k in range(count)]


def index_limits(module: ModuleOp, func: FuncOp) -> dict[str, int]:
    """For each integer argument of `func` that ends up as gather/scatter indices: the size of the indexed axis
    (the least one if several), so random indices are valid. Follows values through shape ops and calls."""
    limits: dict[str, int] = {}
    for arg in func.args:
        limit = _limit(module, func, arg, depth=0)
        if limit is not None:
            limits[arg.name] = limit
    return limits


def _limit(module: ModuleOp, func: FuncOp, value: Value, depth: int) -> int | None:
    if depth > 8:
        return None
    best: int | None = None

    def keep(n: int | None) -> None:
        nonlocal best
        if n is not None:
            best = n if best is None else min(best, n)

    for op in func.walk():
        extent = op.indexed_dim(value)
        if extent is not None:
            keep(extent if isinstance(extent, int) else None)  # a bound program's sizes are all static
        elif op.forwards_values and value in op.operands:
            for r in op.results:
                keep(_limit(module, func, r, depth + 1))
        elif isinstance(op, CallOp) and value in op.args:
            callee = module.lookup(op.callee)
            if callee is not None:
                keep(_limit(module, callee, callee.args[op.args.index(value)], depth + 1))
    return best


def random_inputs(program: Program, seed: int) -> dict[str, np.ndarray]:
    """Seeded inputs: floats from a standard normal (rounded to their type), integers in a valid index range
    where they index something (else [0, 16)), booleans fair coins."""
    rng = np.random.default_rng(seed)
    limits = index_limits(program.module, program.entry)
    arrays: dict[str, np.ndarray] = {}
    for spec in program.inputs:
        dt = spec.type.dtype
        if dt.is_float:
            values = rng.standard_normal(spec.shape)
            arrays[spec.name] = to_storage(values.astype(np.float32) if dt in FORMATS else values.astype(
                spec.dtype), dt)
        elif dt.is_bool:
            arrays[spec.name] = rng.random(spec.shape) < 0.5
        else:
            high = limits.get(spec.name, DEFAULT_INT_HIGH)
            if dt != DType.I64:
                high = min(high, int(np.iinfo(spec.dtype).max))
            arrays[spec.name] = rng.integers(0, high, spec.shape).astype(spec.dtype)
    return arrays


def load_npz(path: str) -> dict[str, np.ndarray]:
    try:
        data = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise InputError(f"cannot read '{path}': no such file") from None
    except IsADirectoryError:
        raise InputError(f"cannot read '{path}': it is a directory") from None
    except EOFError:
        raise InputError(f"cannot read '{path}' as .npz: the file is empty") from None
    except (OSError, ValueError, zipfile.BadZipFile) as err:
        raise InputError(f"cannot read '{path}' as .npz: {err}") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise InputError(f"'{path}' is a .npy file (one unnamed array); give a .npz archive whose arrays are "
                         "named after the arguments, e.g. np.savez('in.npz', x=...)")
    try:
        with data:
            return {k: data[k] for k in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        raise InputError(f"cannot read '{path}' as .npz: {err}") from None


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def least_memory(program: Program) -> int:
    """Bytes a run needs at the least: every argument and result of the entry function at once, plus the
    largest value computed on the way."""
    values = program.params
    ends = sum(s.type.nbytes(values) for s in program.inputs) + sum(t.nbytes(values) for t in program.result_types)
    inner = [r.type.nbytes(values) for op in program.entry.walk() for r in op.results if r.type is not None]
    return ends + max(inner, default=0)


def check_memory(program: Program, available: int | None = None) -> None:
    """Refuses, before allocating anything, a run whose values cannot fit in this machine's memory (a size
    parameter bound too large would otherwise end in a MemoryError, or in swapping, minutes later)."""
    limit = _physical_memory() if available is None else available
    need = least_memory(program)
    if limit is not None and need > limit:
        sizes = ", ".join(f"{k}={v}" for k, v in program.params.items())
        raise InputError(f"the run needs at least {_bytes(need)} for its values ({sizes or 'no parameters'}) but "
                         f"this machine has {_bytes(limit)} of memory: bind smaller sizes with --param")


# The most statements (iteration points of kernels and einsums) `solar-run` executes: about 10^12, minutes
# to hours of compiled code. A larger run is refused up front (docs/errors.md) instead of hanging.
WORK_LIMIT = 10**12


def run_statements(program: Program) -> int:
    """The exact statements a run executes: the iteration points of every kernel and einsum of the entry
    function and, per call, of the functions it calls (solar.ir.analysis.op_counts). Kernels the counts
    cannot model add nothing."""
    from solar.ir.analysis.isl_model import UnsupportedForISL
    from solar.ir.analysis.op_counts import func_counts

    module = program.module

    def count(func: FuncOp, depth: int) -> int:
        total = sum(c.total.points for _, c in func_counts(module, func, {}) if not isinstance(c, UnsupportedForISL))
        for op in func.walk():
            callee = module.lookup(op.callee) if isinstance(op, CallOp) and depth < 64 else None
            if callee is not None:
                total += count(callee, depth + 1)
        return total

    return count(program.entry, 0)


def check_work(program: Program, limit: int = WORK_LIMIT) -> None:
    """Refuses, before compiling anything, a run of more than `limit` statements (a loop of 2^62 trips is
    legal SIR, and would otherwise run for centuries)."""
    need = run_statements(program)
    if need > limit:
        sizes = ", ".join(f"{k}={v}" for k, v in program.params.items())
        raise InputError(f"the run executes {need} statements ({sizes or 'no parameters'}), more than the "
                         f"limit of {limit}: bind smaller sizes with --param")


def _bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{value:.3g} {unit}" if unit != "B" else f"{n} B"
        value /= 1024
    return f"{n} B"


def savable(array: np.ndarray) -> np.ndarray:
    """bf16 and f8 arrays are written as float32 (exact), which NumPy and PyTorch can read back."""
    if array.dtype.kind == "V" or array.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        return array.astype(np.float32)
    return array


def save_npz(path: str, arrays: Mapping[str, np.ndarray] | list[np.ndarray]) -> None:
    """Writes arrays (a list: named out0, out1, ...) to exactly `path`, atomically."""
    named = dict(zip(output_names(len(arrays)), arrays, strict=True)) if isinstance(arrays, list) else arrays
    try:
        with atomic_open(path, "wb") as fh:
            np.savez(fh, **{n: savable(a) for n, a in named.items()})
    except OutputError as err:
        raise InputError(str(err)) from None


@dataclass(frozen=True)
class Comparison:
    name: str
    max_abs: float
    max_rel: float
    mismatched: int  # elements outside atol + rtol * |ref|
    size: int
    tolerance: Tolerance

    @property
    def ok(self) -> bool:
        return self.mismatched == 0


def compare(name: str, actual: np.ndarray, expected: np.ndarray, dtype: DType,
            rtol: float | None = None, atol: float | None = None) -> Comparison:
    """`actual` against `expected` with a dtype-aware tolerance (NaN equals NaN, infinities must match)."""
    tol = default_tolerance(dtype)
    tol = Tolerance(tol.rtol if rtol is None else rtol, tol.atol if atol is None else atol)
    a = np.asarray(actual).astype(np.float64)
    b = np.asarray(expected).astype(np.float64)
    if a.shape != b.shape:
        raise InputError(f"reference {name} has shape {list(b.shape)} but the output has {list(a.shape)}")
    both_nan = np.isnan(a) & np.isnan(b)
    same = (a == b) | both_nan
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(same, 0.0, np.abs(a - b))
        rel = np.where(same, 0.0, diff / np.maximum(np.abs(b), np.finfo(np.float64).tiny))
        bad = ~same & ~(diff <= tol.atol + tol.rtol * np.abs(b))
    finite = diff[np.isfinite(diff)]
    max_abs = float(diff.max()) if diff.size else 0.0
    max_rel = float(rel.max()) if rel.size else 0.0
    if finite.size != diff.size:
        max_abs = max_rel = float("inf")
    return Comparison(name, max_abs, max_rel, int(bad.sum()), int(a.size), tol)


def compare_outputs(outputs: list[np.ndarray], reference: Mapping[str, Any], types: list[Any],
                    rtol: float | None = None, atol: float | None = None) -> list[Comparison]:
    names = output_names(len(outputs))
    complex_refs = [n for n in names if n in reference and np.iscomplexobj(reference[n])]
    if complex_refs:
        first = complex_refs[0]
        raise InputError(f"the reference {first} is complex ({np.asarray(reference[first]).dtype}): SIR values "
                         "are real, so a complex reference cannot match")
    missing = [n for n in names if n not in reference]
    extra = [n for n in reference if n not in names]
    if missing:
        raise InputError(f"the reference lacks {', '.join(missing)} (outputs are named {', '.join(names)})")
    if extra:
        raise InputError(f"the reference has {', '.join(extra)} but the function returns only "
                         f"{', '.join(names) or 'nothing'}")
    return [compare(n, o, np.asarray(reference[n]).view(o.dtype) if np.asarray(reference[n]).dtype.kind == "V"
                    else reference[n], t.dtype, rtol, atol)
            for n, o, t in zip(names, outputs, types, strict=True)]
