"""Reductions (sum, mean, max/min, argmax/argmin, prod, var/std, logsumexp, norms, all/any) and scans
(cumsum, cumprod). One kernel each; narrow floats accumulate in f32.

A scan is a running accumulator, `acc += X[i]; Y[i] = acc`: n operations, as a library scan does. (The
triangular form `Y[i] += X[j], j ≤ i` would lift to an einsum but claims n²/2 operations, which would
make the SOL bound no lower bound.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from solar.ir.dtypes import DType
from solar.ir.expr import Binary, Expr, FloatLit
from solar.ir.ops import Value

from .core import (
    Emitter,
    Reduction,
    _merge,
    acc_dtype,
    access,
    arg_reduce,
    cast,
    count_expr,
    fcall,
    lit,
    loops,
    norm_dim,
    out_index,
    pointwise,
    reduce_kernel,
    reduced_shape,
    select,
    ttype,
    vtype,
)
from .pointwise import BINARY
from .registry import TorchNode, torch_op


def dims_of(n: TorchNode, x: Value, key: str = "dim") -> list[int]:
    rank = vtype(x).rank
    d = n.args.get(key)
    if rank == 0:  # torch lets dim 0 (or -1) name a 0-d tensor's one element: nothing is reduced
        return []
    if d is None or (isinstance(d, list | tuple) and len(d) == 0):
        return list(range(rank))
    if isinstance(d, int):
        return [norm_dim(d, rank)]
    return [norm_dim(k, rank) for k in d]


def _reduced_sizes(x: Value, dims: Sequence[int]) -> list:
    t = vtype(x)
    return [t.shape[k] for k in dims]


@torch_op("sum", "nansum")
def lower_sum(n: TorchNode) -> Value:
    x = n.tensor("self")
    dt = n.out.dtype
    dims = dims_of(n, x)
    acc_t = acc_dtype(dt)
    red = Reduction("sum", value=lambda e: _nan_zero(e, acc_t)) if n.op == "aten::nansum" else Reduction("sum")
    return reduce_kernel(n.em, x, dims, n.get("keepdim", False), dt, red)


def _nan_zero(e: Expr, dt: DType) -> Expr:
    return select(fcall("isnan", e), lit(0, dt), e)


@torch_op("mean", "nanmean")
def lower_mean(n: TorchNode) -> Value:
    x = n.tensor("self")
    dt = n.out.dtype
    dims = dims_of(n, x)
    acc_t = acc_dtype(dt)
    count = count_expr(_reduced_sizes(x, dims), acc_t)
    return reduce_kernel(n.em, x, dims, n.get("keepdim", False), dt,
                         Reduction("sum", finish=lambda a: a / count))


@torch_op("amax", "amin")
def lower_amax(n: TorchNode) -> Value:
    x = n.tensor("self")
    kind = "max" if n.op == "aten::amax" else "min"
    dt = n.out.dtype
    return reduce_kernel(n.em, x, dims_of(n, x), n.get("keepdim", False), dt, Reduction(kind, acc=dt), read_dtype=dt)


def _max_min(n: TorchNode, kind: str) -> Any:
    x = n.tensor("self")
    if n.overload in ("other",):
        return BINARY_POINTWISE(n, "maximum" if kind == "max" else "minimum")
    if n.overload in ("dim", "names_dim"):
        return arg_reduce(n.em, x, n["dim"], n.get("keepdim", False), kind, with_values=True)
    dt = n.out.dtype
    return reduce_kernel(n.em, x, list(range(vtype(x).rank)), False, dt, Reduction(kind, acc=dt), read_dtype=dt)


def BINARY_POINTWISE(n: TorchNode, name: str) -> Value:
    fn = BINARY[name]
    dt = n.out.dtype
    return pointwise(n.em, [n.args["self"], n.args["other"]], dt, lambda e: fn(e[0], e[1], n, dt))


@torch_op("max")
def lower_max(n: TorchNode) -> Any:
    return _max_min(n, "max")


@torch_op("min")
def lower_min(n: TorchNode) -> Any:
    return _max_min(n, "min")


@torch_op("argmax", "argmin")
def lower_argmax(n: TorchNode) -> Value:
    x = n.tensor("self")
    kind = "max" if n.op == "aten::argmax" else "min"
    return arg_reduce(n.em, x, n.args.get("dim"), n.get("keepdim", False), kind)[0]


@torch_op("prod")
def lower_prod(n: TorchNode) -> Value:
    x = n.tensor("self")
    dims = dims_of(n, x) if n.overload != "default" else list(range(vtype(x).rank))
    return reduce_kernel(n.em, x, dims, n.get("keepdim", False), n.out.dtype, Reduction("prod"))


def variance(em: Emitter, x: Value, dims: Sequence[int], keepdim: bool, correction: float, out_dtype: DType,
             sqrt: bool, with_mean: bool = False) -> list[Value]:
    """Two-pass variance (mean, then squared deviations), as torch computes it, in one kernel."""
    t = vtype(x)
    rank = t.rank
    dims = sorted(dims)
    kept = [k for k in range(rank) if k not in dims]
    acc_t = acc_dtype(out_dtype)
    out_shape = reduced_shape(t.shape, dims, keepdim)
    outs = [("V", ttype(out_shape, out_dtype))] + ([("M", ttype(out_shape, out_dtype))] if with_mean else [])
    kb = em.kernel([(x, "X")], outs)
    kshape = [t.shape[k] for k in kept]
    red = [t.shape[k] for k in dims]
    kb.local("s", ttype(kshape, acc_t))
    kb.local("m", ttype(kshape, acc_t))
    kb.local("q", ttype(kshape, acc_t))
    n_count = count_expr(red, acc_t)
    with loops(kb, kshape, "i") as kidx:
        with loops(kb, red, "r") as ridx:
            kb.reduce(access("s", kidx), "+=", cast(access("X", _merge(rank, kept, kidx, dims, ridx)), t.dtype, acc_t))
        kb.assign(access("m", kidx), access("s", kidx) / n_count)
        with loops(kb, red, "r") as ridx:
            dev = cast(access("X", _merge(rank, kept, kidx, dims, ridx)), t.dtype, acc_t) - access("m", kidx)
            kb.reduce(access("q", kidx), "+=", dev * dev)
        if correction and isinstance(n_count, FloatLit):
            denom: Expr = FloatLit(n_count.value - correction)  # folded: both are constants
        else:
            denom = n_count - lit(correction, acc_t) if correction else n_count
        v: Expr = access("q", kidx) / denom
        if sqrt:
            v = fcall("sqrt", v)
        oidx = out_index(kidx, kept, dims, keepdim)
        kb.assign(access("V", oidx), cast(v, acc_t, out_dtype))
        if with_mean:
            kb.assign(access("M", oidx), cast(access("m", kidx), acc_t, out_dtype))
    return list(kb.results)


def _correction(n: TorchNode) -> float:
    c = n.args.get("correction")
    if c is None:
        unbiased = n.args.get("unbiased")
        return 1.0 if unbiased is None or unbiased else 0.0
    return float(c)


@torch_op("var", "std")
def lower_var(n: TorchNode) -> Value:
    x = n.tensor("self")
    return variance(n.em, x, dims_of(n, x), n.get("keepdim", False), _correction(n), n.out.dtype,
                    sqrt=n.op == "aten::std")[0]


@torch_op("var_mean", "std_mean")
def lower_var_mean(n: TorchNode) -> list[Value]:
    x = n.tensor("self")
    return variance(n.em, x, dims_of(n, x), n.get("keepdim", False), _correction(n), n.out.dtype,
                    sqrt=n.op == "aten::std_mean", with_mean=True)


@torch_op("logsumexp")
def lower_logsumexp(n: TorchNode) -> Value:
    x = n.tensor("self")
    t = vtype(x)
    dims = dims_of(n, x)
    keepdim = n.get("keepdim", False)
    dt = n.out.dtype
    acc_t = acc_dtype(dt)
    rank = t.rank
    kept = [k for k in range(rank) if k not in dims]
    kb = n.em.kernel([(x, "X")], [("Y", ttype(reduced_shape(t.shape, dims, keepdim), dt))])
    kshape = [t.shape[k] for k in kept]
    red = [t.shape[k] for k in dims]
    kb.local("mx", ttype(kshape, acc_t))
    kb.local("s", ttype(kshape, acc_t))
    with loops(kb, kshape, "i") as kidx:
        with loops(kb, red, "r") as ridx:
            xv = cast(access("X", _merge(rank, kept, kidx, dims, ridx)), t.dtype, acc_t)
            kb.reduce(access("mx", kidx), "max=", xv)
        with loops(kb, red, "r") as ridx:
            xv = cast(access("X", _merge(rank, kept, kidx, dims, ridx)), t.dtype, acc_t)
            kb.reduce(access("s", kidx), "+=", fcall("exp", xv - access("mx", kidx)))
        kb.assign(access("Y", out_index(kidx, kept, dims, keepdim)),
                  cast(fcall("log", access("s", kidx)) + access("mx", kidx), acc_t, dt))
    return kb.results[0]


def vector_norm(em: Emitter, x: Value, dims: Sequence[int], keepdim: bool, p: float, out_dtype: DType) -> Value:
    acc_t = acc_dtype(out_dtype)
    if p == 2:
        red = Reduction("sum", value=lambda e: e * e, finish=lambda a: fcall("sqrt", a))
    elif p == 1:
        red = Reduction("sum", value=lambda e: fcall("abs", e), finish=lambda a: a)
    elif p == math.inf:
        red = Reduction("max", value=lambda e: fcall("abs", e), finish=lambda a: a)
    elif p == -math.inf:
        red = Reduction("min", value=lambda e: fcall("abs", e), finish=lambda a: a)
    elif p == 0:
        red = Reduction("sum", value=lambda e: cast(Binary("!=", e, lit(0, acc_t)), DType.I1, acc_t),
                        finish=lambda a: a)
    else:
        red = Reduction("sum", value=lambda e: fcall("pow", fcall("abs", e), lit(p, acc_t)),
                        finish=lambda a: fcall("pow", a, lit(1.0 / p, acc_t)))
    return reduce_kernel(em, x, dims, keepdim, out_dtype, red)


@torch_op("linalg_vector_norm", "norm", "frobenius_norm")
def lower_norm(n: TorchNode) -> Value:
    x = n.tensor("self")
    p = n.args.get("ord", n.args.get("p", 2))
    p = 2.0 if p is None or p == "fro" else float(p)
    return vector_norm(n.em, x, dims_of(n, x), n.get("keepdim", False), p, n.out.dtype)


@torch_op("all", "any")
def lower_all_any(n: TorchNode) -> Value:
    x = n.tensor("self")
    t = vtype(x)
    kind = "min" if n.op == "aten::all" else "max"
    dims = dims_of(n, x)
    return reduce_kernel(n.em, x, dims, n.get("keepdim", False), DType.I1,
                         Reduction(kind, value=lambda e: e, acc=DType.I1), read_dtype=DType.I1) \
        if t.dtype.is_bool else reduce_kernel(
            n.em, x, dims, n.get("keepdim", False), DType.I1,
            Reduction(kind, value=lambda e: Binary("!=", e, lit(0, t.dtype)), acc=DType.I1), read_dtype=t.dtype)


@torch_op("count_nonzero")
def lower_count_nonzero(n: TorchNode) -> Value:
    x = n.tensor("self")
    t = vtype(x)
    return reduce_kernel(n.em, x, dims_of(n, x), False, DType.I64,
                         Reduction("sum", value=lambda e: cast(Binary("!=", e, lit(0, t.dtype)), DType.I1, DType.I64)),
                         read_dtype=t.dtype)


def scan(em: Emitter, x: Value, dim: int, op: str, out_dtype: DType) -> Value:
    """Running reduction along `dim`: a carried accumulator per line, n operations per line."""
    t = vtype(x)
    rank = t.rank
    dim = norm_dim(dim, rank)
    if rank == 0:  # a 0-d tensor's running sum (or product) is itself
        kb = em.kernel([(x, "X")], [("Y", ttype((), out_dtype))])
        kb.assign(access("Y", []), cast(access("X", []), t.dtype, out_dtype))
        return kb.results[0]
    kept = [k for k in range(rank) if k != dim]
    acc_t = acc_dtype(out_dtype)
    kb = em.kernel([(x, "X")], [("Y", ttype(t.shape, out_dtype))])
    kshape = [t.shape[k] for k in kept]
    kb.local("acc", ttype(kshape, acc_t))
    with loops(kb, kshape, "i") as kidx, loops(kb, [t.shape[dim]], "r") as ridx:
        full = _merge(rank, kept, kidx, [dim], ridx)
        kb.reduce(access("acc", kidx), op, cast(access("X", full), t.dtype, acc_t))
        kb.assign(access("Y", full), cast(access("acc", kidx), acc_t, out_dtype))
    return kb.results[0]


@torch_op("cumsum")
def lower_cumsum(n: TorchNode) -> Value:
    return scan(n.em, n.tensor("self"), n["dim"], "+=", n.out.dtype)


@torch_op("cumprod")
def lower_cumprod(n: TorchNode) -> Value:
    return scan(n.em, n.tensor("self"), n["dim"], "*=", n.out.dtype)
