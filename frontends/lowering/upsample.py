"""Linear, bilinear, trilinear and bicubic upsampling (`F.interpolate(mode="linear" | "bilinear" |
"trilinear" | "bicubic")`, `align_corners` either way) as one affine kernel.

PyTorch's source coordinate along an axis is `src = (o + 0.5) · r − 0.5` (clamped at 0), or `o · r` with
`align_corners=True`, where `r` is `1 / scale_factor` when one was given, else `in / out` (`(in − 1) / (out −
1)` with corners aligned). With `r = p / q` rational, `src = A(o) / D` for an affine `A` and a constant `D`,
so the lower tap `floor(src) = A(o) floordiv D` is a quasi-affine index and the weight of the upper tap is
`(A(o) mod D) / D`, both allowed in SIR. Each axis splits into at most three ranges of outputs: a prefix
that the clamp at 0 pins to element 0, the interior (taps `i0` and `i0 + 1`), and a suffix whose lower tap
is the last element (one tap). The kernel has one loop nest per combination of ranges: every output
element is written once, from 2^d taps at most, and the input is read as the library reads it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction

from solar.ir.dtypes import DType
from solar.ir.expr import Binary, Cast, Expr, IntLit
from solar.ir.ops import Value

from .core import acc_dtype, access, cast, lit, loops, ttype, vtype
from .registry import TorchNode, torch_op


@dataclass(frozen=True)
class _Axis:
    size: int  # input elements
    out: int  # output elements
    a: int  # A(o) = a·o + b; src = A(o) / d
    b: int
    d: int

    def numerator(self, o: Expr) -> Expr:
        """A(o) as an index expression."""
        prod = o if self.a == 1 else Binary("*", IntLit(self.a), o)
        return Binary("+", prod, IntLit(self.b)) if self.b else prod

    def lower_tap(self, o: int) -> int:
        return max(self.a * o + self.b, 0) // self.d

    def ranges(self) -> list[tuple[str, int, int]]:
        """(kind, first, end) ranges of outputs: 'low' (src clamped to 0), 'in' (two taps), 'high' (the last
        element only); empty ranges dropped."""
        low = next((o for o in range(self.out) if self.a * o + self.b >= 0), self.out)
        high = next((o for o in range(low, self.out) if self.lower_tap(o) >= self.size - 1), self.out)
        out = [("low", 0, low), ("in", low, high), ("high", high, self.out)]
        return [r for r in out if r[2] > r[1]]


def _ratio(value: float) -> Fraction:
    frac = Fraction(value).limit_denominator(1 << 16)
    if float(frac) != value:
        raise ValueError(f"the scale {value!r} is not a ratio of small integers")
    return frac


def _axis(size: int, out: int, align: bool, scale: float | None) -> _Axis:
    if align:
        if out == 1:
            return _Axis(size, out, 0, 0, 1)
        r = Fraction(size - 1, out - 1)
        return _Axis(size, out, r.numerator, 0, r.denominator)
    r = Fraction(1) / _ratio(scale) if scale else Fraction(size, out)
    # src = (o + 1/2)·p/q − 1/2 = ((2p)·o + p − q) / (2q)
    return _Axis(size, out, 2 * r.numerator, r.numerator - r.denominator, 2 * r.denominator)


def _axes(n: TorchNode, x: Value, nsp: int) -> list[_Axis]:
    """The source-coordinate map of each of the `nsp` trailing (spatial) axes, from the sizes or the scale
    factors the op was given."""
    t = vtype(x)
    out = n.out.shape
    align = bool(n.get("align_corners", False))
    scales = n.args.get("scale_factors")
    if not scales:
        scales = [n.args.get(k) for k in ("scales_d", "scales_h", "scales_w", "scales")[-nsp - 1:] if k in n.args]
        scales = (scales + [None] * nsp)[:nsp] if scales else [None] * nsp
    axes: list[_Axis] = []
    for k in range(nsp):
        d = t.rank - nsp + k
        size, o = t.shape[d], out[d]
        if not isinstance(size, int) or not isinstance(o, int):
            raise n.unsupported("upsampling a symbolic size")
        try:
            axes.append(_axis(size, o, align, scales[k]))
        except ValueError as err:
            raise n.unsupported(str(err)) from None
    return axes


@torch_op("upsample_linear1d", "upsample_bilinear2d", "upsample_trilinear3d")
def lower_upsample_linear(n: TorchNode) -> Value:
    x = n.tensor("input") if "input" in n.args else n.tensor("self")
    t = vtype(x)
    nsp = 1 if "1d" in n.op else 2 if "2d" in n.op else 3
    out = n.out.shape
    axes = _axes(n, x, nsp)
    acc = acc_dtype(t.dtype)
    kb = n.em.kernel([(x, "X")], [("Y", ttype(out, t.dtype))])
    # The weights of each axis's two taps, computed once per output coordinate into on-chip locals (as a
    # library precomputes them), so each output element costs only its interpolation.
    for k, ax in enumerate(axes):
        interior = [r for r in ax.ranges() if r[0] == "in"]
        if not interior or ax.d == 1:
            continue
        kb.local(f"W{k}", ttype([ax.out], acc))
        kb.local(f"V{k}", ttype([ax.out], acc))
        _, first, end = interior[0]
        with loops(kb, [end], f"w{k}_", lower=[first]) as (o,):
            kb.assign(access(f"W{k}", [o]), Binary("/", Cast(acc, Binary("mod", ax.numerator(o), IntLit(ax.d))),
                                                   lit(float(ax.d), acc)))
            kb.assign(access(f"V{k}", [o]), Binary("-", lit(1.0, acc), access(f"W{k}", [o])))
    lead = t.rank - nsp
    for combo in itertools.product(*[ax.ranges() for ax in axes]):
        lows = [0] * lead + [r[1] for r in combo]
        ends = list(out[:lead]) + [r[2] for r in combo]
        with loops(kb, ends, "i", lower=lows) as idx:
            taps = [_taps(ax, kind, idx[lead + k], k) for k, (ax, (kind, _, _)) in enumerate(zip(axes, combo,
                                                                                                 strict=True))]

            kb.assign(access("Y", idx), cast(_interpolate(taps, [], idx[:lead], t.dtype, acc), acc, t.dtype))
    return kb.results[0]


def _interpolate(taps: list[list[tuple[Expr, Expr | None]]], chosen: list[Expr], lead: list[Expr], dtype: DType,
                 acc: DType) -> Expr:
    """Separable: a lerp along the first remaining axis of lerps along the later ones, 3·(2^d − 1)
    operations for d interpolated axes (fewer where an axis has one tap)."""
    k = len(chosen)
    if k == len(taps):
        return cast(access("X", [*lead, *chosen]), dtype, acc)
    total: Expr | None = None
    for i, w in taps[k]:
        inner = _interpolate(taps, [*chosen, i], lead, dtype, acc)
        term = inner if w is None else Binary("*", inner, w)
        total = term if total is None else Binary("+", total, term)
    assert total is not None
    return total


def _taps(ax: _Axis, kind: str, o: Expr, k: int) -> list[tuple[Expr, Expr | None]]:
    """(index, weight) of each tap along axis k for outputs `o` of a range; weight None means 1."""
    if kind == "low":
        return [(IntLit(0), None)]
    if kind == "high":
        return [(IntLit(ax.size - 1), None)]
    if ax.d == 1:
        return [(ax.numerator(o), None)]  # src is an integer: one tap, weight 1
    i0 = Binary("floordiv", ax.numerator(o), IntLit(ax.d))
    return [(i0, access(f"V{k}", [o])), (Binary("+", i0, IntLit(1)), access(f"W{k}", [o]))]


# ---- bicubic ------------------------------------------------------------------------------------------
#
# PyTorch's bicubic upsampling (`F.interpolate(mode="bicubic")`, not antialiased) takes four taps per axis,
# i0 − 1 … i0 + 2 around `i0 = floor(src)`, each clamped into the input, with Keys' cubic-convolution weights
# (a = −0.75) of the fraction `t = src − i0`; the source coordinate is not clamped at 0 here, unlike the
# linear modes. With `src = A(o) / D`, `i0 = A(o) floordiv D` and `t = (A(o) mod D) / D`: quasi-affine, as for
# the linear modes. Each axis splits into ranges of outputs whose four taps keep one clamping pattern (below
# the input, inside it, above it); a tap inside reads `i0 + k − 1`, a clamped one reads the first or the last
# element. One loop nest per combination of ranges; weights once per output coordinate and axis.

CUBIC_A = -0.75


def _cubic_ranges(ax: _Axis) -> list[tuple[tuple[str, ...], int, int]]:
    """(pattern, first, end): consecutive outputs whose taps k = 0..3 have one status each: 'low' (below the
    input: element 0), 'in' (`i0 + k − 1`), 'high' (past it: the last element)."""
    out: list[tuple[tuple[str, ...], int, int]] = []
    for o in range(ax.out):
        i0 = (ax.a * o + ax.b) // ax.d
        pattern = tuple("low" if i0 + k - 1 < 0 else "high" if i0 + k - 1 > ax.size - 1 else "in" for k in range(4))
        if out and out[-1][0] == pattern:
            out[-1] = (pattern, out[-1][1], o + 1)
        else:
            out.append((pattern, o, o + 1))
    return out


def _cubic_weights(t: Expr, acc: DType) -> list[Expr]:
    """Keys' weights of the taps at distances 1 + t, t, 1 − t, 2 − t, as PyTorch evaluates them (Horner)."""
    a = CUBIC_A

    def plus(e: Expr, c: float) -> Expr:
        return Binary("+", e, lit(c, acc)) if c >= 0 else Binary("-", e, lit(-c, acc))

    def near(x: Expr) -> Expr:  # ((a + 2)·x − (a + 3))·x·x + 1, for |x| ≤ 1
        inner = plus(Binary("*", lit(a + 2, acc), x), -(a + 3))
        return plus(Binary("*", Binary("*", inner, x), x), 1.0)

    def far(x: Expr) -> Expr:  # ((a·x − 5a)·x + 8a)·x − 4a, for 1 < |x| < 2
        inner = plus(Binary("*", plus(Binary("*", lit(a, acc), x), -5 * a), x), 8 * a)
        return plus(Binary("*", inner, x), -4 * a)

    return [far(plus(t, 1.0)), near(t), near(Binary("-", lit(1.0, acc), t)), far(Binary("-", lit(2.0, acc), t))]


@torch_op("upsample_bicubic2d")
def lower_upsample_bicubic(n: TorchNode) -> Value:
    x = n.tensor("input") if "input" in n.args else n.tensor("self")
    t = vtype(x)
    out = n.out.shape
    axes = _axes(n, x, 2)
    acc = acc_dtype(t.dtype)
    kb = n.em.kernel([(x, "X")], [("Y", ttype(out, t.dtype))])
    for k, ax in enumerate(axes):
        if ax.d == 1:
            continue  # src is an integer: t = 0, the weights are 0, 1, 0, 0 (one tap)
        kb.local(f"T{k}", ttype([ax.out], acc))
        for j in range(4):
            kb.local(f"W{k}_{j}", ttype([ax.out], acc))
        with loops(kb, [ax.out], f"w{k}_") as (o,):
            kb.assign(access(f"T{k}", [o]), Binary("/", Cast(acc, Binary("mod", ax.numerator(o), IntLit(ax.d))),
                                                   lit(float(ax.d), acc)))
            for j, w in enumerate(_cubic_weights(access(f"T{k}", [o]), acc)):
                kb.assign(access(f"W{k}_{j}", [o]), w)
    lead = t.rank - 2
    for combo in itertools.product(*[_cubic_ranges(ax) for ax in axes]):
        lows = [0] * lead + [r[1] for r in combo]
        ends = list(out[:lead]) + [r[2] for r in combo]
        with loops(kb, ends, "i", lower=lows) as idx:
            taps = [_cubic_taps(ax, pattern, idx[lead + k], k) for k, (ax, (pattern, _, _))
                    in enumerate(zip(axes, combo, strict=True))]
            kb.assign(access("Y", idx), cast(_interpolate(taps, [], idx[:lead], t.dtype, acc), acc, t.dtype))
    return kb.results[0]


def _cubic_taps(ax: _Axis, pattern: tuple[str, ...], o: Expr, k: int) -> list[tuple[Expr, Expr | None]]:
    """(index, weight) of the four taps along axis k for the outputs `o` of one range."""
    i0 = ax.numerator(o) if ax.d == 1 else Binary("floordiv", ax.numerator(o), IntLit(ax.d))
    taps: list[tuple[Expr, Expr | None]] = []
    for j, status in enumerate(pattern):
        index: Expr = IntLit(0) if status == "low" else IntLit(ax.size - 1) if status == "high" else \
            i0 if j == 1 else Binary("-", i0, IntLit(1)) if j == 0 else Binary("+", i0, IntLit(j - 1))
        if ax.d == 1:
            if j == 1:
                return [(index, None)]  # weights 0, 1, 0, 0
            continue
        taps.append((index, access(f"W{k}_{j}", [o])))
    return taps
