"""Elementwise ops: math, activations, comparisons, where/masked fill, casts. Each is one broadcasting kernel."""

from __future__ import annotations

import math
from collections.abc import Callable

from solar.ir.dtypes import DType
from solar.ir.expr import Binary, Expr, FloatLit, Unary
from solar.ir.ops import SliceEntry, Value

from .core import (
    LoweringError,
    cast,
    dexpr,
    fcall,
    is_empty,
    lit,
    norm_dim,
    pointwise,
    promote,
    select,
    smax,
    smin,
    vtype,
)
from .registry import TorchNode, torch_op
from .selection import nonzero_columns

Fn1 = Callable[[Expr, TorchNode, DType], Expr]


def _times(x: Expr, v: float, dt: DType) -> Expr:
    """x·v, or x itself for v = 1 (no multiply to count)."""
    return x if v == 1 else x * lit(v, dt)


def relu6(x: Expr, dt: DType) -> Expr:
    return smin(smax(x, lit(0, dt)), lit(6, dt))


def softplus(x: Expr, beta: float, threshold: float, dt: DType) -> Expr:
    bx = x if beta == 1 else x * lit(beta, dt)
    soft = fcall("log1p", fcall("exp", bx))
    if beta != 1:
        soft = soft / lit(beta, dt)
    return select(Binary(">", bx, lit(threshold, dt)), x, soft)


def gelu(x: Expr, approximate: str, dt: DType) -> Expr:
    if approximate == "tanh":
        inner = lit(math.sqrt(2 / math.pi), dt) * (x + lit(0.044715, dt) * x * x * x)
        return lit(0.5, dt) * x * (lit(1.0, dt) + fcall("tanh", inner))
    return lit(0.5, dt) * x * (lit(1.0, dt) + fcall("erf", x * lit(1 / math.sqrt(2), dt)))


def trunc(x: Expr, dt: DType) -> Expr:
    return select(Binary("<", x, lit(0, dt)), fcall("ceil", x), fcall("floor", x))


SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946

# Unary ops on floats (integer inputs are computed in the output type, which torch makes float).
UNARY: dict[str, Fn1] = {
    "exp": lambda x, n, dt: fcall("exp", x),
    "exp2": lambda x, n, dt: fcall("exp2", x),
    "expm1": lambda x, n, dt: fcall("expm1", x),
    "log": lambda x, n, dt: fcall("log", x),
    "log2": lambda x, n, dt: fcall("log2", x),
    "log10": lambda x, n, dt: fcall("log", x) * lit(1 / math.log(10), dt),
    "log1p": lambda x, n, dt: fcall("log1p", x),
    "sqrt": lambda x, n, dt: fcall("sqrt", x),
    "rsqrt": lambda x, n, dt: fcall("rsqrt", x),
    "sin": lambda x, n, dt: fcall("sin", x),
    "cos": lambda x, n, dt: fcall("cos", x),
    "tan": lambda x, n, dt: fcall("sin", x) / fcall("cos", x),
    "tanh": lambda x, n, dt: fcall("tanh", x),
    "sinh": lambda x, n, dt: (fcall("exp", x) - fcall("exp", Unary("-", x))) * lit(0.5, dt),
    "cosh": lambda x, n, dt: (fcall("exp", x) + fcall("exp", Unary("-", x))) * lit(0.5, dt),
    "sigmoid": lambda x, n, dt: fcall("sigmoid", x),
    "erf": lambda x, n, dt: fcall("erf", x),
    "erfc": lambda x, n, dt: lit(1.0, dt) - fcall("erf", x),
    "reciprocal": lambda x, n, dt: fcall("reciprocal", x),
    "floor": lambda x, n, dt: fcall("floor", x) if dt.is_float else x,
    "ceil": lambda x, n, dt: fcall("ceil", x) if dt.is_float else x,
    "round": lambda x, n, dt: fcall("round", x) if dt.is_float else x,
    "trunc": lambda x, n, dt: trunc(x, dt) if dt.is_float else x,
    "fix": lambda x, n, dt: trunc(x, dt) if dt.is_float else x,
    "frac": lambda x, n, dt: x - trunc(x, dt),
    "abs": lambda x, n, dt: fcall("abs", x),
    "neg": lambda x, n, dt: Unary("-", x),
    "negative": lambda x, n, dt: Unary("-", x),
    "positive": lambda x, n, dt: x,
    "sign": lambda x, n, dt: fcall("sign", x),
    "sgn": lambda x, n, dt: fcall("sign", x),
    "square": lambda x, n, dt: x * x,
    "relu": lambda x, n, dt: smax(x, lit(0, dt)),
    "relu6": lambda x, n, dt: relu6(x, dt),
    "silu": lambda x, n, dt: x * fcall("sigmoid", x),
    "mish": lambda x, n, dt: x * fcall("tanh", softplus(x, 1.0, 20.0, dt)),
    "gelu": lambda x, n, dt: gelu(x, n.get("approximate", "none"), dt),
    "hardsigmoid": lambda x, n, dt: relu6(x + lit(3, dt), dt) / lit(6, dt),
    "hardswish": lambda x, n, dt: x * relu6(x + lit(3, dt), dt) / lit(6, dt),
    "hardtanh": lambda x, n, dt: smin(smax(x, lit(n.get("min_val", -1.0), dt)), lit(n.get("max_val", 1.0), dt)),
    "leaky_relu": lambda x, n, dt: select(Binary(">", x, lit(0, dt)), x, x * lit(n.get("negative_slope", 0.01), dt)),
    "elu": lambda x, n, dt: select(
        Binary(">", x, lit(0, dt)), _times(x, n.get("scale", 1.0), dt),
        _times(fcall("expm1", _times(x, n.get("input_scale", 1.0), dt)),
               n.get("scale", 1.0) * n.get("alpha", 1.0), dt)),
    "selu": lambda x, n, dt: select(Binary(">", x, lit(0, dt)), x * lit(SELU_SCALE, dt),
                                    lit(SELU_SCALE * SELU_ALPHA, dt) * fcall("expm1", x)),
    "celu": lambda x, n, dt: smax(x, lit(0, dt)) + smin(
        lit(0, dt), lit(n.get("alpha", 1.0), dt) * fcall("expm1", x / lit(n.get("alpha", 1.0), dt))),
    "softplus": lambda x, n, dt: softplus(x, n.get("beta", 1.0), n.get("threshold", 20.0), dt),
    "log_sigmoid": lambda x, n, dt: smin(x, lit(0, dt)) - fcall("log1p", fcall("exp", Unary("-", fcall("abs", x)))),
    "hardshrink": lambda x, n, dt: select(Binary(">", fcall("abs", x), lit(n.get("lambd", 0.5), dt)), x, lit(0, dt)),
    "softshrink": lambda x, n, dt: select(
        Binary(">", x, lit(n.get("lambd", 0.5), dt)), x - lit(n.get("lambd", 0.5), dt),
        select(Binary("<", x, lit(-n.get("lambd", 0.5), dt)), x + lit(n.get("lambd", 0.5), dt), lit(0, dt))),
    "threshold": lambda x, n, dt: select(Binary(">", x, lit(n["threshold"], dt)), x, lit(n["value"], dt)),
    "rrelu": lambda x, n, dt: select(Binary(">=", x, lit(0, dt)), x,
                                     x * lit((n.get("lower", 1 / 8) + n.get("upper", 1 / 3)) / 2, dt)),
    "nan_to_num": lambda x, n, dt: _nan_to_num(x, n, dt),
}


def _nan_to_num(x: Expr, n: TorchNode, dt: DType) -> Expr:
    big = {DType.F64: 1.7976931348623157e308, DType.F16: 65504.0,
           DType.BF16: 3.3895313892515355e38}.get(dt, 3.4028234663852886e38)
    pos = n.get("posinf", big)
    neg = n.get("neginf", -big)
    inf = FloatLit(math.inf)
    y = select(Binary("==", x, inf), lit(pos, dt), select(Binary("==", x, Unary("-", inf)), lit(neg, dt), x))
    return select(fcall("isnan", x), lit(n.get("nan", 0.0), dt), y)


def _unary_lowering(name: str, fn: Fn1) -> Callable[[TorchNode], Value]:
    def lower(n: TorchNode) -> Value:
        x = n.tensor("self")
        dt = n.out.dtype
        if name in ("abs", "neg", "negative", "sign", "sgn") and dt.is_bool:
            raise n.unsupported(f"{name} of a boolean tensor")
        return pointwise(n.em, [x], dt, lambda a: fn(a[0], n, dt))

    return lower


# export's graphs are functional (relu_ becomes relu), so only out-of-place names are registered.
for _name, _fn in UNARY.items():
    torch_op(_name)(_unary_lowering(_name, _fn))


@torch_op("dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout", "native_dropout")
def lower_dropout(n: TorchNode) -> Value | list[Value]:
    # Exported in eval mode: dropout is the identity (native_dropout also returns a keep-mask).
    x = n.tensor("input") if "input" in n.args else n.tensor("self")
    if n.get("train", False) and n.get("p", 0.0):
        if n.op not in ("aten::dropout", "aten::native_dropout"):
            raise n.unsupported(f"{n.op.split('::')[1]} in training mode")
        from .random import training_dropout  # the generator kernels live with the random ops

        out, mask = training_dropout(n, x, float(n["p"]))
        return [out, mask] if n.op == "aten::native_dropout" else out
    if n.op == "aten::native_dropout":
        mask = pointwise(n.em, [x], DType.I1, lambda a: lit(True, DType.I1), result=DType.I1, hint="mask")
        return [x, mask]
    return x


@torch_op("isnan")
def lower_isnan(n: TorchNode) -> Value:
    x = n.tensor("self")
    return pointwise(n.em, [x], DType.I1, lambda a: fcall("isnan", a[0]), compute=vtype(x).dtype, result=DType.I1)


@torch_op("isinf")
def lower_isinf(n: TorchNode) -> Value:
    x = n.tensor("self")
    return pointwise(n.em, [x], DType.I1, lambda a: Binary("==", fcall("abs", a[0]), FloatLit(math.inf)),
                     compute=vtype(x).dtype, result=DType.I1)


@torch_op("isfinite")
def lower_isfinite(n: TorchNode) -> Value:
    x = n.tensor("self")
    return pointwise(n.em, [x], DType.I1, lambda a: Binary("<", fcall("abs", a[0]), FloatLit(math.inf)),
                     compute=vtype(x).dtype, result=DType.I1)


@torch_op("logical_not", "bitwise_not")
def lower_not(n: TorchNode) -> Value:
    x = n.tensor("self")
    if n.op == "aten::bitwise_not" and not vtype(x).dtype.is_bool:
        raise n.unsupported("bitwise_not of integers")
    return pointwise(n.em, [x], n.out.dtype, lambda a: Unary("not", a[0]), compute=DType.I1, result=DType.I1)


# ---- binary arithmetic -------------------------------------------------------------------------------


def _other(n: TorchNode) -> Value | int | float | bool:
    o = n.args.get("other")
    if o is None:
        raise n.unsupported("missing second operand")
    return o


def _binary(name: str, fn: Callable[[Expr, Expr, TorchNode, DType], Expr]) -> Callable[[TorchNode], Value]:
    def lower(n: TorchNode) -> Value:
        a, b = n.args["self"], _other(n)
        dt = n.out.dtype
        return pointwise(n.em, [a, b], dt, lambda e: fn(e[0], e[1], n, dt))

    return lower


def _scaled(b: Expr, n: TorchNode, dt: DType) -> Expr:
    alpha = n.get("alpha", 1)
    return b if alpha == 1 else b * lit(alpha, dt)


def _add(a: Expr, b: Expr, n: TorchNode, dt: DType) -> Expr:
    if dt.is_bool:
        return Binary("or", a, b)
    return a + _scaled(b, n, dt)


def _div(a: Expr, b: Expr, n: TorchNode, dt: DType) -> Expr:
    mode = n.get("rounding_mode")
    if dt.is_float:
        q = a / b
        return fcall("floor", q) if mode == "floor" else trunc(q, dt) if mode == "trunc" else q
    if mode == "floor":
        return Binary("floordiv", a, b)
    raise LoweringError("integer division with truncation is not supported")


def _floor_divide(a: Expr, b: Expr, n: TorchNode, dt: DType) -> Expr:
    return fcall("floor", a / b) if dt.is_float else Binary("floordiv", a, b)


def _remainder(a: Expr, b: Expr, n: TorchNode, dt: DType) -> Expr:
    return a - fcall("floor", a / b) * b if dt.is_float else Binary("mod", a, b)


def _fmod(a: Expr, b: Expr, n: TorchNode, dt: DType) -> Expr:
    if not dt.is_float:
        raise LoweringError("integer fmod is not supported")
    return a - trunc(a / b, dt) * b


def _pow(a: Expr, b: Expr, n: TorchNode, dt: DType) -> Expr:
    if isinstance(b, FloatLit) and b.value == 2.0:
        return a * a
    if isinstance(b, FloatLit) and b.value == 0.5:
        return fcall("sqrt", a)
    if isinstance(b, FloatLit) and b.value == 1.0:
        return a
    if not dt.is_float:
        if hasattr(b, "value") and isinstance(b.value, int) and 0 <= b.value <= 4:  # type: ignore[attr-defined]
            out: Expr = lit(1, dt)
            for _ in range(b.value):  # type: ignore[attr-defined]
                out = a if out == lit(1, dt) else out * a
            return out
        raise LoweringError("integer pow is supported for small constant exponents only")
    return fcall("pow", a, b)


BINARY: dict[str, Callable[[Expr, Expr, TorchNode, DType], Expr]] = {
    "add": _add,
    "sub": lambda a, b, n, dt: a - _scaled(b, n, dt),
    "subtract": lambda a, b, n, dt: a - _scaled(b, n, dt),
    "rsub": lambda a, b, n, dt: b - _scaled(a, n, dt),
    "mul": lambda a, b, n, dt: Binary("and", a, b) if dt.is_bool else a * b,
    "multiply": lambda a, b, n, dt: a * b,
    "div": _div,
    "divide": _div,
    "true_divide": _div,
    "floor_divide": _floor_divide,
    "remainder": _remainder,
    "fmod": _fmod,
    "maximum": lambda a, b, n, dt: smax(a, b),
    "minimum": lambda a, b, n, dt: smin(a, b),
    "fmax": lambda a, b, n, dt: select(fcall("isnan", b), a, select(fcall("isnan", a), b, smax(a, b))),
    "fmin": lambda a, b, n, dt: select(fcall("isnan", b), a, select(fcall("isnan", a), b, smin(a, b))),
    "hypot": lambda a, b, n, dt: fcall("sqrt", a * a + b * b),
    "xlogy": lambda a, b, n, dt: select(Binary("==", a, lit(0, dt)), lit(0, dt), a * fcall("log", b)),
    "copysign": lambda a, b, n, dt: select(Binary("<", b, lit(0, dt)), Unary("-", fcall("abs", a)), fcall("abs", a)),
}

for _name, _bfn in BINARY.items():
    torch_op(_name)(_binary(_name, _bfn))


@torch_op("pow", "float_power")
def lower_pow(n: TorchNode) -> Value:
    # pow.Tensor_Scalar, pow.Tensor_Tensor and pow.Scalar (a scalar base): `self` ** `exponent`.
    base, e = n.args["self"], n.args["exponent"]
    dt = n.out.dtype
    return pointwise(n.em, [base, e], dt, lambda x: _pow(x[0], x[1], n, dt))


# ---- comparisons and logic ---------------------------------------------------------------------------

COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
           "less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">=", "not_equal": "!="}


def _compare(op: str) -> Callable[[TorchNode], Value]:
    def lower(n: TorchNode) -> Value:
        a, b = n.args["self"], _other(n)
        compute = promote(a, b)
        return pointwise(n.em, [a, b], DType.I1, lambda e: Binary(op, e[0], e[1]), compute=compute, result=DType.I1)

    return lower


for _name, _op in COMPARE.items():
    torch_op(_name)(_compare(_op))


LOGIC = {"logical_and": "and", "logical_or": "or", "bitwise_and": "and", "bitwise_or": "or",
         "__and__": "and", "__or__": "or"}  # `a & b`, `a | b` of boolean masks (a causal and sliding window)


def _logic(name: str, op: str) -> Callable[[TorchNode], Value]:
    def lower(n: TorchNode) -> Value:
        a, b = n.args["self"], _other(n)
        if not name.startswith("logical") and n.out.dtype != DType.I1:
            raise n.unsupported("bitwise ops on integers")
        return pointwise(n.em, [a, b], n.out.dtype, lambda e: Binary(op, e[0], e[1]), compute=DType.I1, result=DType.I1)

    return lower


for _name, _op in LOGIC.items():
    torch_op(_name)(_logic(_name, _op))


@torch_op("logical_xor", "bitwise_xor")
def lower_xor(n: TorchNode) -> Value:
    a, b = n.args["self"], _other(n)
    if n.op == "aten::bitwise_xor" and n.out.dtype != DType.I1:
        raise n.unsupported("bitwise ops on integers")
    return pointwise(n.em, [a, b], n.out.dtype, lambda e: Binary("!=", e[0], e[1]), compute=DType.I1, result=DType.I1)


@torch_op("where")
def lower_where(n: TorchNode) -> Value | list[Value]:
    c, a, b = n.args["condition"], n.args.get("self"), n.args.get("other")
    if a is None:  # where(condition): nonzero's coordinates, one tensor per dim
        try:
            return nonzero_columns(n.em, n.tensor("condition"))
        except ValueError as err:
            raise n.unsupported(str(err)) from None
    if not isinstance(c, Value) or not vtype(c).dtype.is_bool:
        raise n.unsupported("where needs a boolean tensor condition")
    return pointwise(n.em, [c, a, b], n.out.dtype, lambda e: select(e[0], e[1], e[2]), raw=(0,))


@torch_op("masked_fill")
def lower_masked_fill(n: TorchNode) -> Value:
    x, mask, value = n.tensor("self"), n.tensor("mask"), n.args["value"]
    dt = n.out.dtype
    shape = vtype(x).shape
    return pointwise(n.em, [mask, value, x], dt, lambda e: select(e[0], e[1], e[2]), out_shape=shape,
                     raw=(0,))


@torch_op("clamp", "clip")
def lower_clamp(n: TorchNode) -> Value:
    x, lo, hi = n.tensor("self"), n.args.get("min"), n.args.get("max")
    dt = n.out.dtype

    def fn(e: list[Expr]) -> Expr:
        y = e[0]
        k = 1
        if lo is not None:
            y = smax(y, e[k])
            k += 1
        if hi is not None:
            y = smin(y, e[k])
        return y

    return pointwise(n.em, [x, *[v for v in (lo, hi) if v is not None]], dt, fn)


@torch_op("clamp_min")
def lower_clamp_min(n: TorchNode) -> Value:
    x, lo = n.tensor("self"), n.args["min"]
    return pointwise(n.em, [x, lo], n.out.dtype, lambda e: smax(e[0], e[1]))


@torch_op("clamp_max")
def lower_clamp_max(n: TorchNode) -> Value:
    x, hi = n.tensor("self"), n.args["max"]
    return pointwise(n.em, [x, hi], n.out.dtype, lambda e: smin(e[0], e[1]))


@torch_op("lerp")
def lower_lerp(n: TorchNode) -> Value:
    a, b, w = n.tensor("self"), n.args["end"], n.args["weight"]
    return pointwise(n.em, [a, b, w], n.out.dtype, lambda e: e[0] + e[2] * (e[1] - e[0]))


@torch_op("addcmul")
def lower_addcmul(n: TorchNode) -> Value:
    x, t1, t2, v = n.tensor("self"), n.tensor("tensor1"), n.tensor("tensor2"), n.get("value", 1)
    dt = n.out.dtype
    return pointwise(n.em, [x, t1, t2], dt, lambda e: e[0] + (e[1] * e[2] if v == 1 else lit(v, dt) * e[1] * e[2]))


@torch_op("addcdiv")
def lower_addcdiv(n: TorchNode) -> Value:
    x, t1, t2, v = n.tensor("self"), n.tensor("tensor1"), n.tensor("tensor2"), n.get("value", 1)
    dt = n.out.dtype
    return pointwise(n.em, [x, t1, t2], dt, lambda e: e[0] + (e[1] / e[2] if v == 1 else lit(v, dt) * e[1] / e[2]))


@torch_op("prelu", "_prelu_kernel")
def lower_prelu(n: TorchNode) -> Value:
    x, w = n.tensor("self"), n.tensor("weight")
    xt, wt = vtype(x), vtype(w)
    dt = n.out.dtype
    em = n.em
    # The weight applies per channel (dim 1), or is a single value.
    if wt.rank == 1 and xt.rank >= 2 and wt.shape[0] != 1:
        w = em.reshape(w, (wt.shape[0],) + (1,) * (xt.rank - 2))
    return pointwise(em, [x, w], dt, lambda e: select(Binary(">", e[0], lit(0, dt)), e[0], e[1] * e[0]),
                     out_shape=xt.shape)


@torch_op("glu")
def lower_glu(n: TorchNode) -> Value:
    x = n.tensor("self")
    t = vtype(x)
    dim = norm_dim(n.get("dim", -1), t.rank)
    half = t.shape[dim]
    if not isinstance(half, int) or half % 2:
        raise n.unsupported("glu needs an even, static size along its dimension")
    h = half // 2
    shape = list(t.shape)
    shape[dim] = h
    em = n.em
    parts = []
    for start in (0, h):
        entries = [SliceEntry(start=dexpr(0), stop=dexpr(d)) for d in t.shape]
        entries[dim] = SliceEntry(start=dexpr(start), stop=dexpr(start + h))
        parts.append(em.slice(x, entries, tuple(shape)))
    return pointwise(em, parts, n.out.dtype, lambda e: e[0] * fcall("sigmoid", e[1]))


@torch_op("_to_copy", "to", "type_as")
def lower_to_copy(n: TorchNode) -> Value:
    x = n.tensor("self")
    dt = n.out.dtype
    src = vtype(x).dtype
    if src == dt:
        return x  # a copy or a device move: no conversion, nothing to compute (an empty cache passes)
    if is_empty(x):
        return n.em.constant(0, n.out.shape, dt)  # an empty tensor converted: still empty, nothing to compute
    return pointwise(n.em, [x], dt, lambda e: cast(e[0], src, dt), compute=src, result=dt)
