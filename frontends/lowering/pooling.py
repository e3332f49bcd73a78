"""Pooling (max, avg, adaptive; 1-3 spatial dims) and nearest upsampling. Padding is an `affine.if` guard;
an average's divisor is a constant where every window is full, else counted in the kernel."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from solar.ir.dtypes import DType
from solar.ir.expr import Binary, Cast, Expr, IntLit
from solar.ir.ops import Value
from solar.ir.types import Dim

from .conv import _affine, tuple_n
from .core import (
    Emitter,
    LoweringError,
    acc_dtype,
    access,
    cast,
    conj,
    count_expr,
    dexpr,
    guard,
    linear_index,
    lit,
    loops,
    select,
    smax,
    smin,
    ttype,
    vtype,
)
from .registry import TorchNode, torch_op


@dataclass
class Window:
    """One spatial dim of a pooling window: position `p·stride + r·dilation − pad` for r in [0, k), or,
    for adaptive pooling, r itself for r in [⌊p·In/Out⌋, ⌈(p+1)·In/Out⌉)."""

    size: Dim  # input extent
    out: Dim
    k: int = 1
    stride: int = 1
    pad: int = 0
    dilation: int = 1
    adaptive: bool = False

    def bounds(self, p: Expr) -> tuple[Expr, Expr]:
        if not self.adaptive:
            return IntLit(0), IntLit(self.k)
        n, m = self.size, self.out
        assert isinstance(n, int) and isinstance(m, int)
        if n % m == 0:
            k = n // m
            return _affine((k, p)), _affine((k, p), k)
        return Binary("floordiv", _affine((n, p)), IntLit(m)), Binary("ceildiv", _affine((n, p), n), IntLit(m))

    def pos(self, p: Expr, r: Expr) -> Expr:
        if self.adaptive:
            return r
        return _affine((self.stride, p), (self.dilation, r), -self.pad)

    def conds(self, q: Expr) -> list[Expr]:
        if self.adaptive:
            return []
        out: list[Expr] = []
        if self.pad > 0:
            out.append(Binary(">=", q, IntLit(0)))
        if not self.fits():
            out.append(Binary("<", q, dexpr(self.size)))
        return out

    def fits(self) -> bool:
        """Every window ends inside the input (no guard needed on the upper edge)."""
        if self.adaptive:
            return True
        if not all(isinstance(v, int) for v in (self.size, self.out)):
            return False
        return (self.out - 1) * self.stride + (self.k - 1) * self.dilation - self.pad <= self.size - 1  # type: ignore[operator]

    def fits_padded(self) -> bool:
        """Every window ends inside the padded input (so a padded count is the full window)."""
        if not all(isinstance(v, int) for v in (self.size, self.out)):
            return False
        return (self.out - 1) * self.stride + (self.k - 1) * self.dilation - self.pad <= self.size + self.pad - 1  # type: ignore[operator]

    def full(self) -> bool:
        """Every window lies wholly inside the (unpadded) input."""
        if self.adaptive:
            return isinstance(self.size, int) and isinstance(self.out, int) and self.size % self.out == 0
        return self.pad == 0 and self.fits()

    def count(self) -> int:
        if self.adaptive:
            assert isinstance(self.size, int) and isinstance(self.out, int)
            return self.size // self.out
        return self.k


def pool(em: Emitter, x: Value, wins: Sequence[Window], kind: str, out_dtype: DType, *,
         with_indices: bool = False, count_include_pad: bool = True, divisor: int | None = None) -> list[Value]:
    """`kind` 'max', 'avg' or 'sum' pooling over the last len(wins) dims of x."""
    summed = kind == "sum"
    if summed:
        kind, count_include_pad = "avg", True
    t = vtype(x)
    nsp = len(wins)
    lead = list(t.shape[: t.rank - nsp])
    out_shape = [*lead, *(w.out for w in wins)]
    acc_t = acc_dtype(out_dtype) if kind == "avg" else out_dtype
    outs = [("Y", ttype(out_shape, out_dtype))]
    if with_indices:
        outs.append(("I", ttype(out_shape, DType.I64)))
    kb = em.kernel([(x, "X")], outs)
    const_div: int | None = divisor
    if kind == "avg" and const_div is None and not summed and (
            all(w.full() for w in wins) or (count_include_pad and all(w.fits_padded() and not w.adaptive
                                                                      for w in wins))):
            const_div = 1
            for w in wins:
                const_div *= w.count()
    acc = "acc" if kind == "avg" or with_indices else "Y"
    if acc == "acc":
        kb.local("acc", ttype(out_shape, acc_t))
    with loops(kb, lead, "b") as bidx, loops(kb, [w.out for w in wins], "p") as ps:
        oidx = [*bidx, *ps]

        def window_loops() -> object:
            from contextlib import ExitStack

            stack = ExitStack()
            rs = []
            for k, (w, p) in enumerate(zip(wins, ps, strict=True)):
                lo, hi = w.bounds(p)
                rs.append(stack.enter_context(kb.loop(f"r{k}", lo, hi)))
            return stack, rs

        stack, rs = window_loops()  # type: ignore[misc]
        with stack:
            pos = [w.pos(p, r) for w, p, r in zip(wins, ps, rs, strict=True)]
            cond = conj(*[c for w, q in zip(wins, pos, strict=True) for c in w.conds(q)])
            xv = access("X", [*bidx, *pos])
            with guard(kb, cond):
                if kind == "max":
                    kb.reduce(access(acc, oidx), "max=", xv)
                else:
                    kb.reduce(access("acc", oidx), "+=", cast(xv, t.dtype, acc_t))
        if with_indices:
            stack, rs = window_loops()  # type: ignore[misc]
            with stack:
                pos = [w.pos(p, r) for w, p, r in zip(wins, ps, rs, strict=True)]
                cond = conj(*[c for w, q in zip(wins, pos, strict=True) for c in w.conds(q)])
                flat = linear_index(pos, tuple(w.size for w in wins))
                big = 1
                for w in wins:
                    big *= w.size if isinstance(w.size, int) else 1 << 30
                with guard(kb, cond):
                    kb.reduce(access("I", oidx), "min=",
                              select(Binary("==", access("X", [*bidx, *pos]), access("acc", oidx)), flat, IntLit(big)))
        if summed:
            kb.assign(access("Y", oidx), cast(access("acc", oidx), acc_t, out_dtype))
        elif kind == "avg":
            div: Expr = (lit(const_div, acc_t) if const_div is not None
                         else window_count(wins, ps, count_include_pad, acc_t))
            kb.assign(access("Y", oidx), cast(access("acc", oidx) / div, acc_t, out_dtype))
        elif with_indices:
            kb.assign(access("Y", oidx), access("acc", oidx))
    return list(kb.results)


def window_count(wins: Sequence[Window], ps: Sequence[Expr], include_pad: bool, dt: DType) -> Expr:
    """The divisor of an average as a closed form in the output position (min/max of the window's ends),
    evaluated once per output rather than counted per tap, so the kernel stays liftable."""
    total: Expr | None = None
    for w, p in zip(wins, ps, strict=True):
        lo, hi = w.bounds(p)
        if not w.adaptive:
            start = w.pos(p, IntLit(0))
            lo, hi = start, _affine((w.stride, p), w.k - w.pad)
            if include_pad:
                if not w.fits_padded():
                    hi = smin(hi, dexpr(w.size + w.pad))  # type: ignore[operator]
            else:
                if w.pad > 0:
                    lo = smax(lo, IntLit(0))
                if not w.fits():
                    hi = smin(hi, dexpr(w.size))
        n = Binary("-", hi, lo)
        total = n if total is None else Binary("*", total, n)
    assert total is not None
    return Cast(dt, total)


def _windows(n: TorchNode, x: Value, nsp: int, out_shape: Sequence[Dim]) -> list[Window]:
    t = vtype(x)
    ks = tuple_n(n["kernel_size"], nsp)
    stride = n.args.get("stride")
    stride = ks if not stride else tuple_n(stride, nsp)
    pad = tuple_n(n.get("padding", 0), nsp)
    dil = tuple_n(n.get("dilation", 1), nsp)
    sizes = t.shape[t.rank - nsp:]
    outs = out_shape[len(out_shape) - nsp:]
    return [Window(s, o, k, st, p, d) for s, o, k, st, p, d in zip(sizes, outs, ks, stride, pad, dil, strict=True)]


def _nsp(n: TorchNode) -> int:
    for k in (1, 2, 3):
        if f"{k}d" in n.op:
            return k
    raise LoweringError(f"cannot tell the spatial rank of {n.op}")


@torch_op("max_pool1d", "max_pool2d", "max_pool3d")
def lower_max_pool(n: TorchNode) -> Value:
    x = n.tensor("self")
    return pool(n.em, x, _windows(n, x, _nsp(n), n.out.shape), "max", n.out.dtype)[0]


@torch_op("max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices")
def lower_max_pool_indices(n: TorchNode) -> list[Value]:
    x = n.tensor("self")
    return pool(n.em, x, _windows(n, x, _nsp(n), n.out.shape), "max", n.out.dtype, with_indices=True)


@torch_op("avg_pool1d", "avg_pool2d", "avg_pool3d")
def lower_avg_pool(n: TorchNode) -> Value:
    x = n.tensor("self")
    return pool(n.em, x, _windows(n, x, _nsp(n), n.out.shape), "avg", n.out.dtype,
                count_include_pad=n.get("count_include_pad", True), divisor=n.args.get("divisor_override"))[0]


def _adaptive(n: TorchNode, x: Value) -> list[Window]:
    t = vtype(x)
    nsp = _nsp(n)
    sizes = t.shape[t.rank - nsp:]
    outs = n.out.shape[len(n.out.shape) - nsp:]
    for s in sizes:
        if not isinstance(s, int):
            raise n.unsupported("adaptive pooling over a symbolic size")
    return [Window(s, o, adaptive=True) for s, o in zip(sizes, outs, strict=True)]


@torch_op("adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "_adaptive_avg_pool2d",
          "_adaptive_avg_pool3d")
def lower_adaptive_avg(n: TorchNode) -> Value:
    x = n.tensor("self")
    nsp = _nsp(n)
    if all(o == 1 for o in n.out.shape[len(n.out.shape) - nsp:]):
        return global_avg_pool(n.em, x, nsp, n.out.dtype)
    return pool(n.em, x, _adaptive(n, x), "avg", n.out.dtype, count_include_pad=False)[0]


def global_avg_pool(em: Emitter, x: Value, nsp: int, out_dtype: DType) -> Value:
    """Adaptive average pooling to one element per channel (a ResNet's last pooling): the mean over the
    `nsp` spatial dims, whose sizes may be symbolic (the count is then an expression of their parameters),
    so the image size of a network stays a size parameter that validation shrinks."""
    t = vtype(x)
    lead, spatial = list(t.shape[:t.rank - nsp]), list(t.shape[t.rank - nsp:])
    acc_t = acc_dtype(out_dtype)
    kb = em.kernel([(x, "X")], [("Y", ttype((*lead, *[1] * nsp), out_dtype))])
    kb.local("s", ttype(lead, acc_t))
    with loops(kb, lead, "i") as idx:
        with loops(kb, spatial, "r") as ridx:
            kb.reduce(access("s", idx), "+=", cast(access("X", [*idx, *ridx]), t.dtype, acc_t))
        mean = access("s", idx) / count_expr(spatial, acc_t)
        kb.assign(access("Y", [*idx, *[IntLit(0)] * nsp]), cast(mean, acc_t, out_dtype))
    return kb.results[0]


@torch_op("adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d")
def lower_adaptive_max(n: TorchNode) -> list[Value]:
    x = n.tensor("self")
    return pool(n.em, x, _adaptive(n, x), "max", n.out.dtype, with_indices=True)


@torch_op("upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d", "_upsample_nearest_exact1d",
          "_upsample_nearest_exact2d", "_upsample_nearest_exact3d")
def lower_upsample_nearest(n: TorchNode) -> Value:
    x = n.tensor("input") if "input" in n.args else n.tensor("self")
    t = vtype(x)
    nsp = _nsp(n)
    out = n.out.shape
    exact = "exact" in n.op
    scales = n.args.get("scale_factors") or [None] * nsp
    kb = n.em.kernel([(x, "X")], [("Y", ttype(out, t.dtype))])
    with loops(kb, out, "i") as idx:
        src = list(idx[: t.rank - nsp])
        for k in range(nsp):
            d = t.rank - nsp + k
            i, o, q = t.shape[d], out[d], idx[d]
            if not isinstance(i, int) or not isinstance(o, int):
                raise n.unsupported("upsampling a symbolic size")
            s = scales[k]
            if s is not None and float(s).is_integer() and o == i * int(s):
                src.append(Binary("floordiv", q, IntLit(int(s))) if s != 1 else q)
            elif exact:
                src.append(Binary("floordiv", _affine((2 * i, q), i), IntLit(2 * o)))
            else:
                src.append(Binary("floordiv", _affine((i, q)), IntLit(o)) if i != o else q)
        kb.assign(access("Y", idx), access("X", src))
    return kb.results[0]
