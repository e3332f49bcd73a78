"""Convolutions, 1-3 spatial dims, with stride, padding, dilation, groups; transposed with output padding.

Padding is an `affine.if` guard around the accumulation (as examples/conv2d.sir does), never a padded copy:
the iteration domain then holds exactly the multiply-adds a direct convolution performs, so lifting counts
them exactly. A transposed convolution is written in scatter form, `Y[p·s + r·d − pad] += X[p] · W[r]`,
which lifts to an einsum with an affine window in the result.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

from solar.ir.builder import KernelBuilder
from solar.ir.dtypes import DType
from solar.ir.expr import Binary, Expr, IntLit
from solar.ir.ops import Value
from solar.ir.types import Dim

from .core import (
    Emitter,
    LoweringError,
    acc_dtype,
    access,
    cast,
    conj,
    dexpr,
    guard,
    loops,
    ttype,
    vtype,
)
from .registry import TorchNode, torch_op


def tuple_n(v: Any, n: int) -> list[int]:
    if isinstance(v, int):
        return [v] * n
    v = list(v)
    if len(v) == 1:
        return v * n
    return v


@contextmanager
def maybe_loops(kb: KernelBuilder, extents: Sequence[Dim], names: Sequence[str]) -> Iterator[list[Expr]]:
    """Loops over the extents, except extent-1 ones, whose index is the constant 0."""
    with ExitStack() as stack:
        out: list[Expr] = []
        for d, name in zip(extents, names, strict=True):
            if isinstance(d, int) and d == 1:
                out.append(IntLit(0))
            else:
                out.append(stack.enter_context(kb.loop(name, 0, dexpr(d))))
        yield out


def _affine(*terms: tuple[int, Expr] | int) -> Expr:
    """Σ coefficient·index + constant, skipping zero terms, as a tidy expression."""
    out: Expr | None = None
    const = 0
    for t in terms:
        if isinstance(t, int):
            const += t
            continue
        c, e = t
        if c == 0 or (isinstance(e, IntLit) and e.value == 0):
            continue
        term = e if c == 1 else Binary("*", IntLit(c), e)
        out = term if out is None else Binary("+", out, term)
    if out is None:
        return IntLit(const)
    if const > 0:
        return Binary("+", out, IntLit(const))
    if const < 0:
        return Binary("-", out, IntLit(-const))
    return out


def _chan(g: Expr, per: Dim, c: Expr, groups: int) -> Expr:
    if groups == 1:
        return c
    assert isinstance(per, int)
    return _affine((per, g), (1, c))


def conv_forward(em: Emitter, x: Value, w: Value, b: Value | None, stride: list[int], padding: list[int],
                 dilation: list[int], groups: int, out_shape: Sequence[Dim], out_dtype: DType,
                 fp32: str | None = None) -> Value:
    xt, wt = vtype(x), vtype(w)
    nsp = xt.rank - 2
    n_, _, *sizes = xt.shape
    cout, cg, *ks = wt.shape
    if not isinstance(cout, int) or not isinstance(cg, int):
        raise LoweringError("convolution weights need static sizes")
    kg = cout // groups
    pout = list(out_shape[2:])
    acc_t = acc_dtype(out_dtype)
    direct = acc_t == out_dtype
    ins = [(x, "X"), (w, "W")] + ([(b, "Bias")] if b is not None else [])
    kb = em.kernel(ins, [("Y", ttype(out_shape, out_dtype))])
    em.mark_precision(kb, "conv", xt.dtype, fp32)
    if not direct:
        kb.local("acc", ttype(out_shape, acc_t))
    with maybe_loops(kb, [n_], ["n"]) as (n,), maybe_loops(kb, [groups], ["g"]) as (g,), \
            maybe_loops(kb, [kg], ["k"]) as (k,), maybe_loops(kb, pout, [f"p{i}" for i in range(nsp)]) as ps:
        oc = _chan(g, kg, k, groups)
        yidx = [n, oc, *ps]
        if direct and b is not None:
            kb.assign(access("Y", yidx), access("Bias", [oc]))
        with maybe_loops(kb, [cg], ["c"]) as (c,), maybe_loops(kb, ks, [f"r{i}" for i in range(nsp)]) as rs:
            pos = [_affine((s, p), (d, r), -pad)
                   for s, p, d, r, pad in zip(stride, ps, dilation, rs, padding, strict=True)]
            conds: list[Expr | None] = []
            for q, pad, size, p_out, kk, s, d in zip(pos, padding, sizes, pout, ks, stride, dilation, strict=True):
                if pad > 0:
                    conds.append(Binary(">=", q, IntLit(0)))
                # The upper edge needs a guard only where the last window can run past the input.
                static = all(isinstance(v, int) for v in (size, p_out, kk))
                if not static or (p_out - 1) * s + (kk - 1) * d - pad > size - 1:  # type: ignore[operator]
                    conds.append(Binary("<", q, dexpr(size)))
            with guard(kb, conj(*conds)):
                xv = cast(access("X", [n, _chan(g, cg, c, groups), *pos]), xt.dtype, acc_t)
                wv = cast(access("W", [oc, c, *rs]), wt.dtype, acc_t)
                kb.reduce(access("Y" if direct else "acc", yidx), "+=", xv * wv)
        if not direct:
            value: Expr = access("acc", yidx)
            if b is not None:
                value = value + cast(access("Bias", [oc]), vtype(b).dtype, acc_t)
            kb.assign(access("Y", yidx), cast(value, acc_t, out_dtype))
    return kb.results[0]


def conv_transposed(em: Emitter, x: Value, w: Value, b: Value | None, stride: list[int], padding: list[int],
                    dilation: list[int], groups: int, out_shape: Sequence[Dim], out_dtype: DType,
                    fp32: str | None = None) -> Value:
    xt, wt = vtype(x), vtype(w)
    nsp = xt.rank - 2
    n_, cin, *sizes = xt.shape
    _, cog, *ks = wt.shape
    if not isinstance(cin, int) or not isinstance(cog, int):
        raise LoweringError("transposed convolution weights need static sizes")
    cig = cin // groups
    qout = list(out_shape[2:])
    acc_t = acc_dtype(out_dtype)
    direct = acc_t == out_dtype
    ins = [(x, "X"), (w, "W")] + ([(b, "Bias")] if b is not None else [])
    kb = em.kernel(ins, [("Y", ttype(out_shape, out_dtype))])
    em.mark_precision(kb, "conv", xt.dtype, fp32)
    acc = "Y" if direct else "acc"
    if not direct:
        kb.local("acc", ttype(out_shape, acc_t))
    if direct and b is not None:
        with loops(kb, out_shape, "o") as oidx:
            kb.assign(access("Y", oidx), access("Bias", [oidx[1]]))
    with maybe_loops(kb, [n_], ["n"]) as (n,), maybe_loops(kb, [groups], ["g"]) as (g,), \
            maybe_loops(kb, [cog], ["k"]) as (k,), maybe_loops(kb, [cig], ["c"]) as (c,), \
            maybe_loops(kb, sizes, [f"p{i}" for i in range(nsp)]) as ps, \
            maybe_loops(kb, ks, [f"r{i}" for i in range(nsp)]) as rs:
        oc = _chan(g, cog, k, groups)
        ic = _chan(g, cig, c, groups)
        pos = [_affine((s, p), (d, r), -pad) for s, p, d, r, pad in zip(stride, ps, dilation, rs, padding, strict=True)]
        conds: list[Expr | None] = []
        for q, pad, size, q_out, kk, s, d in zip(pos, padding, sizes, qout, ks, stride, dilation, strict=True):
            if pad > 0:
                conds.append(Binary(">=", q, IntLit(0)))
            static = all(isinstance(v, int) for v in (size, q_out, kk))
            if not static or (size - 1) * s + (kk - 1) * d - pad > q_out - 1:  # type: ignore[operator]
                conds.append(Binary("<", q, dexpr(q_out)))
        with guard(kb, conj(*conds)):
            xv = cast(access("X", [n, ic, *ps]), xt.dtype, acc_t)
            wv = cast(access("W", [ic, k, *rs]), wt.dtype, acc_t)
            kb.reduce(access(acc, [n, oc, *pos]), "+=", xv * wv)
    if not direct:
        with loops(kb, out_shape, "o") as oidx:
            value: Expr = access("acc", oidx)
            if b is not None:
                value = value + cast(access("Bias", [oidx[1]]), vtype(b).dtype, acc_t)
            kb.assign(access("Y", oidx), cast(value, acc_t, out_dtype))
    return kb.results[0]


def _same_padding(ks: list[int], dilation: list[int]) -> list[int]:
    pads = []
    for k, d in zip(ks, dilation, strict=True):
        total = d * (k - 1)
        if total % 2:
            raise LoweringError("padding='same' with an even effective kernel (asymmetric padding)")
        pads.append(total // 2)
    return pads


def lower_conv(n: TorchNode, transposed: bool) -> Value:
    x, w, b = n.tensor("input"), n.tensor("weight"), n.args.get("bias")
    b = b if isinstance(b, Value) else None
    wt = vtype(w)
    nsp = wt.rank - 2
    stride = tuple_n(n.get("stride", 1), nsp)
    dilation = tuple_n(n.get("dilation", 1), nsp)
    groups = n.get("groups", 1)
    pad_arg = n.get("padding", 0)
    ks = [int(k) for k in wt.shape[2:]]
    if isinstance(pad_arg, str):
        padding = [0] * nsp if pad_arg == "valid" else _same_padding(ks, dilation)
    else:
        padding = tuple_n(pad_arg, nsp)
    xt = vtype(x)
    em = n.em
    out_shape = n.out.shape
    unbatched = xt.rank == nsp + 1
    if unbatched:
        x = em.reshape(x, (1, *xt.shape))
        out_shape = (1, *out_shape)
    fn = conv_transposed if transposed else conv_forward
    y = fn(em, x, w, b, stride, padding, dilation, groups, out_shape, n.out.dtype)
    return em.reshape(y, n.out.shape) if unbatched else y


@torch_op("conv1d", "conv2d", "conv3d")
def lower_convnd(n: TorchNode) -> Value:
    return lower_conv(n, transposed=False)


@torch_op("conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
def lower_conv_transpose(n: TorchNode) -> Value:
    return lower_conv(n, transposed=True)


@torch_op("convolution", "_convolution")
def lower_convolution(n: TorchNode) -> Value:
    return lower_conv(n, transposed=bool(n.get("transposed", False)))
