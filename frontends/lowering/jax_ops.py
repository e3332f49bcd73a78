"""The JAX table: jaxpr primitives → the same kernel templates the PyTorch table uses."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from solar.ir.dtypes import DType
from solar.ir.expr import Binary, Expr, FloatLit, IntLit, Unary
from solar.ir.ops import SliceEntry, Value

from . import selection
from .conv import conv_forward
from .core import (
    Reduction,
    access,
    arg_reduce,
    cast,
    dexpr,
    fcall,
    lit,
    loops,
    norm_dim,
    pointwise,
    prod_dims,
    reduce_kernel,
    select,
    smax,
    smin,
    ttype,
    vtype,
)
from .indexing import flat_index
from .matmul import LETTERS, contraction
from .pooling import Window, pool
from .reduction import scan
from .registry import JaxNode, jax_prim


def _trunc(x: Expr, dt: DType) -> Expr:
    return select(Binary("<", x, lit(0, dt)), fcall("ceil", x), fcall("floor", x))


UNARY: dict[str, Callable[[Expr, Any, DType], Expr]] = {
    "neg": lambda x, n, dt: Unary("-", x),
    "exp": lambda x, n, dt: fcall("exp", x),
    "exp2": lambda x, n, dt: fcall("exp2", x),
    "log": lambda x, n, dt: fcall("log", x),
    "log1p": lambda x, n, dt: fcall("log1p", x),
    "expm1": lambda x, n, dt: fcall("expm1", x),
    "tanh": lambda x, n, dt: fcall("tanh", x),
    "logistic": lambda x, n, dt: fcall("sigmoid", x),
    "sin": lambda x, n, dt: fcall("sin", x),
    "cos": lambda x, n, dt: fcall("cos", x),
    "tan": lambda x, n, dt: fcall("sin", x) / fcall("cos", x),
    "sqrt": lambda x, n, dt: fcall("sqrt", x),
    "rsqrt": lambda x, n, dt: fcall("rsqrt", x),
    "cbrt": lambda x, n, dt: fcall("sign", x) * fcall("pow", fcall("abs", x), lit(1 / 3, dt)),
    "abs": lambda x, n, dt: fcall("abs", x),
    "sign": lambda x, n, dt: fcall("sign", x),
    "floor": lambda x, n, dt: fcall("floor", x),
    "ceil": lambda x, n, dt: fcall("ceil", x),
    "round": lambda x, n, dt: fcall("round", x),
    "erf": lambda x, n, dt: fcall("erf", x),
    "erfc": lambda x, n, dt: lit(1, dt) - fcall("erf", x),
    "square": lambda x, n, dt: x * x,
    "integer_pow": lambda x, n, dt: _ipow(x, int(n.params["y"]), dt),
    "stop_gradient": lambda x, n, dt: x,
    "reduce_precision": lambda x, n, dt: x,
    "copy": lambda x, n, dt: x,
    "copy_p": lambda x, n, dt: x,
    "optimization_barrier": lambda x, n, dt: x,
}


def _ipow(x: Expr, y: int, dt: DType) -> Expr:
    if y == 0:
        return lit(1, dt)
    base = x if y > 0 else fcall("reciprocal", x)
    out = base
    for _ in range(abs(y) - 1):
        out = out * base
    return out


def _unary(name: str, fn: Callable[[Expr, Any, DType], Expr]) -> Callable[[Any], Value]:
    def lower(n: JaxNode) -> Value:
        x = n.tensor(0)
        if name in ("stop_gradient", "reduce_precision", "copy", "copy_p", "optimization_barrier"):
            return x
        dt = n.out.dtype
        return pointwise(n.em, [x], dt, lambda a: fn(a[0], n, dt))

    return lower


for _n, _f in UNARY.items():
    jax_prim(_n)(_unary(_n, _f))


def _int_div(a: Expr, b: Expr) -> Expr:
    # lax.div on integers rounds toward zero.
    return select(Binary("==", Binary("<", a, IntLit(0)), Binary("<", b, IntLit(0))), Binary("floordiv", a, b),
                  Unary("-", Binary("floordiv", Unary("-", a), b)))


BINARY: dict[str, Callable[[Expr, Expr, DType], Expr]] = {
    "add": lambda a, b, dt: Binary("or", a, b) if dt.is_bool else a + b,
    "add_any": lambda a, b, dt: a + b,
    "sub": lambda a, b, dt: a - b,
    "mul": lambda a, b, dt: Binary("and", a, b) if dt.is_bool else a * b,
    "div": lambda a, b, dt: a / b if dt.is_float else _int_div(a, b),
    "max": lambda a, b, dt: Binary("or", a, b) if dt.is_bool else smax(a, b),
    "min": lambda a, b, dt: Binary("and", a, b) if dt.is_bool else smin(a, b),
    "pow": lambda a, b, dt: fcall("pow", a, b),
    "rem": lambda a, b, dt: a - _trunc(a / b, dt) * b if dt.is_float else Binary("mod", a, b),
    "and": lambda a, b, dt: Binary("and", a, b),
    "or": lambda a, b, dt: Binary("or", a, b),
    "xor": lambda a, b, dt: Binary("!=", a, b),
    "nextafter": lambda a, b, dt: a,
}


def _binary(name: str, fn: Callable[[Expr, Expr, DType], Expr]) -> Callable[[Any], Value]:
    def lower(n: JaxNode) -> Value:
        dt = n.out.dtype
        if name in ("and", "or", "xor") and not dt.is_bool:
            raise n.unsupported("bitwise operations on integers")
        if name == "nextafter":
            raise n.unsupported("nextafter")
        return pointwise(n.em, n.inputs[:2], dt, lambda e: fn(e[0], e[1], dt))

    return lower


for _n, _g in BINARY.items():
    if _n != "nextafter":
        jax_prim(_n)(_binary(_n, _g))

COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _compare(op: str) -> Callable[[Any], Value]:
    def lower(n: JaxNode) -> Value:
        a, b = n.inputs[:2]
        src = vtype(a).dtype if isinstance(a, Value) else vtype(b).dtype
        return pointwise(n.em, [a, b], DType.I1, lambda e: Binary(op, e[0], e[1]), compute=src, result=DType.I1)

    return lower


for _n, _o in COMPARE.items():
    jax_prim(_n)(_compare(_o))


@jax_prim("not")
def lower_not(n: JaxNode) -> Value:
    x = n.tensor(0)
    if not vtype(x).dtype.is_bool:
        raise n.unsupported("bitwise not of integers")
    return pointwise(n.em, [x], DType.I1, lambda e: Unary("not", e[0]))


@jax_prim("is_finite")
def lower_is_finite(n: JaxNode) -> Value:
    x = n.tensor(0)
    return pointwise(n.em, [x], DType.I1, lambda e: Binary("<", fcall("abs", e[0]), FloatLit(math.inf)),
                     compute=vtype(x).dtype, result=DType.I1)


@jax_prim("select_n")
def lower_select_n(n: JaxNode) -> Value:
    pred, *cases = n.inputs
    if len(cases) != 2:
        raise n.unsupported(f"select_n with {len(cases)} cases (two are supported)")
    dt = n.out.dtype
    pt = vtype(pred).dtype if isinstance(pred, Value) else DType.I1
    if not pt.is_bool:
        return pointwise(n.em, [pred, *cases], dt,
                         lambda e: select(Binary("!=", e[0], IntLit(0)), e[2], e[1]), raw=(0,))
    # select_n(p, a, b) is b where p holds, else a.
    return pointwise(n.em, [pred, *cases], dt, lambda e: select(e[0], e[2], e[1]), raw=(0,))


@jax_prim("clamp")
def lower_clamp(n: JaxNode) -> Value:
    lo, x, hi = n.inputs
    return pointwise(n.em, [lo, x, hi], n.out.dtype, lambda e: smin(smax(e[1], e[0]), e[2]))


@jax_prim("convert_element_type")
def lower_convert(n: JaxNode) -> Value:
    x = n.tensor(0)
    src, dt = vtype(x).dtype, n.out.dtype
    if src == dt:
        return x
    return pointwise(n.em, [x], dt, lambda e: cast(e[0], src, dt), compute=src, result=dt)


# ---- shapes -----------------------------------------------------------------------------------------------


@jax_prim("broadcast_in_dim")
def lower_broadcast_in_dim(n: JaxNode) -> Value:
    x = n.tensor(0)
    dims = list(n.params["broadcast_dimensions"])
    out = n.out.shape
    em = n.em
    xt = vtype(x)
    if dims != sorted(dims):
        order = sorted(range(len(dims)), key=lambda k: dims[k])
        x = em.permute(x, order)
        dims = sorted(dims)
        xt = vtype(x)
    if xt.rank == len(out) and all(a == b for a, b in zip(xt.shape, out, strict=True)):
        return x
    em.block.broadcast(x, dims, ttype(out, xt.dtype), hint="bcast")
    op = em.block.ops[-1]
    em.stamp(op)
    return op.results[0]


@jax_prim("reshape", "squeeze", "expand_dims")
def lower_reshape(n: JaxNode) -> Value:
    if n.params.get("dimensions") not in (None, ()) and n.prim == "reshape":
        raise n.unsupported("reshape with a dimension permutation")
    return n.em.reshape(n.tensor(0), n.out.shape)


@jax_prim("transpose")
def lower_transpose(n: JaxNode) -> Value:
    return n.em.permute(n.tensor(0), list(n.params["permutation"]))


@jax_prim("concatenate")
def lower_concatenate(n: JaxNode) -> Value:
    return n.em.concat([n.tensor(k) for k in range(len(n.inputs))], int(n.params["dimension"]))


@jax_prim("slice")
def lower_slice(n: JaxNode) -> Value:
    x = n.tensor(0)
    starts, limits = n.params["start_indices"], n.params["limit_indices"]
    strides = n.params.get("strides") or [1] * len(starts)
    entries = [SliceEntry(start=IntLit(int(a)), stop=IntLit(int(b)), step=IntLit(int(s)) if s != 1 else None)
               for a, b, s in zip(starts, limits, strides, strict=True)]
    return n.em.slice(x, entries, n.out.shape)


@jax_prim("split")
def lower_split(n: JaxNode) -> list[Value]:
    x = n.tensor(0)
    axis = int(n.params["axis"])
    xt = vtype(x)
    out = []
    start = 0
    for size, meta in zip(n.params["sizes"], n.outs, strict=True):
        entries = [SliceEntry(start=IntLit(0), stop=dexpr(d)) for d in xt.shape]
        entries[axis] = SliceEntry(start=IntLit(start), stop=IntLit(start + int(size)))
        out.append(n.em.slice(x, entries, meta.shape))
        start += int(size)
    return out


@jax_prim("rev")
def lower_rev(n: JaxNode) -> Value:
    return n.em.flip(n.tensor(0), (int(d) for d in n.params["dimensions"]))


@jax_prim("pad")
def lower_pad(n: JaxNode) -> Value:
    x, value = n.tensor(0), n.inputs[1]
    cfg = n.params["padding_config"]
    if any(int(c[2]) for c in cfg):
        raise n.unsupported("interior padding")
    t = vtype(x)
    out = n.out.shape
    ins = [(x, "X")] + ([(value, "V")] if isinstance(value, Value) else [])
    kb = n.em.kernel(ins, [("Y", ttype(out, t.dtype))])
    fill = access("V", []) if isinstance(value, Value) else lit(value, t.dtype)
    with loops(kb, out) as idx:
        kb.assign(access("Y", idx), fill)
    lows = [int(c[0]) for c in cfg]
    highs = [int(c[1]) for c in cfg]
    lo_in = [max(-lo, 0) for lo in lows]
    hi_in = [int(d) - max(-hi, 0) for d, hi in zip(t.shape, highs, strict=True)]
    with loops(kb, hi_in, "j", lower=lo_in) as jdx:
        dst = [j + IntLit(lo) if lo else j for j, lo in zip(jdx, lows, strict=True)]
        kb.assign(access("Y", dst), access("X", jdx))
    return kb.results[0]


@jax_prim("iota")
def lower_iota(n: JaxNode) -> Value:
    dt = n.out.dtype
    dim = int(n.params["dimension"])
    kb = n.em.kernel([], [("Y", ttype(n.out.shape, dt))])
    with loops(kb, n.out.shape) as idx:
        kb.assign(access("Y", idx), cast(idx[dim], DType.I64, dt))
    n.em.iotas[kb.results[0]] = dim
    return kb.results[0]


# ---- reductions ---------------------------------------------------------------------------------------------

REDUCE = {"reduce_sum": "sum", "reduce_max": "max", "reduce_min": "min", "reduce_prod": "prod",
          "reduce_and": "min", "reduce_or": "max"}


def _reduce(kind: str) -> Callable[[Any], Value]:
    def lower(n: JaxNode) -> Value:
        x = n.tensor(0)
        dt = n.out.dtype
        red = Reduction(kind, acc=dt if kind in ("max", "min") else None)
        return reduce_kernel(n.em, x, list(n.params["axes"]), False, dt, red,
                             read_dtype=dt if kind in ("max", "min") else None)

    return lower


for _n, _k in REDUCE.items():
    jax_prim(_n)(_reduce(_k))


@jax_prim("argmax", "argmin")
def lower_argmax(n: JaxNode) -> Value:
    axes = list(n.params["axes"])
    if len(axes) != 1:
        raise n.unsupported("argmax over several axes")
    idx = arg_reduce(n.em, n.tensor(0), axes[0], False, "max" if n.prim == "argmax" else "min")[0]
    if n.out.dtype != DType.I64:
        return pointwise(n.em, [idx], n.out.dtype, lambda e: cast(e[0], DType.I64, n.out.dtype), compute=DType.I64,
                         result=n.out.dtype)
    return idx


@jax_prim("cumsum", "cumprod")
def lower_cumsum(n: JaxNode) -> Value:
    x = n.tensor(0)
    if n.params.get("reverse"):
        raise n.unsupported("reverse cumulative reductions")
    op = {"cumsum": "+=", "cumprod": "*="}[n.prim]
    return scan(n.em, x, int(n.params["axis"]), op, n.out.dtype)


# ---- contractions --------------------------------------------------------------------------------------------


@jax_prim("dot_general")
def lower_dot_general(n: JaxNode) -> Value:
    a, b = n.tensor(0), n.tensor(1)
    (lc, rc), (lb, rb) = n.params["dimension_numbers"]
    ra, rbk = vtype(a).rank, vtype(b).rank
    la = [""] * ra
    lbl = [""] * rbk
    letters = iter(LETTERS)
    out = ""
    for x, y in zip(lb, rb, strict=True):
        ch = next(letters)
        la[x] = lbl[y] = ch
        out += ch
    for x, y in zip(lc, rc, strict=True):
        ch = next(letters)
        la[x] = lbl[y] = ch
    for k in range(ra):
        if not la[k]:
            la[k] = next(letters)
            out += la[k]
    for k in range(rbk):
        if not lbl[k]:
            lbl[k] = next(letters)
            out += lbl[k]
    return contraction(n.em, [(a, "".join(la)), (b, "".join(lbl))], out, n.out.dtype, fp32=_precision(n))


def jax_precision(setting: Any) -> str:
    """The `fp32_precision` value of a JAX precision setting: a `Precision`, its name, a pair of them (the
    least precise operand decides) or None (DEFAULT). HIGHEST (and "float32") is exact FP32; HIGH runs
    three BF16 passes, priced at TF32 (no faster than that); DEFAULT allows TF32 on GPUs."""
    if isinstance(setting, tuple | list):
        values = [jax_precision(s) for s in setting]
        return "tf32" if "tf32" in values else "highest"
    name = str(getattr(setting, "name", setting) or "default").lower()
    return "highest" if name in ("highest", "float32", "precision.highest") else "tf32"


def _precision(n: JaxNode) -> str | None:
    """The equation's own `precision=` as an `fp32_precision` value; None: the default of the export."""
    if n.params.get("precision") is None:
        return None
    return jax_precision(n.params["precision"])


@jax_prim("conv_general_dilated")
def lower_conv(n: JaxNode) -> Value:
    x, w = n.tensor(0), n.tensor(1)
    p = n.params
    if any(d != 1 for d in p["lhs_dilation"]):
        raise n.unsupported("input dilation (transposed convolution)")
    if p["batch_group_count"] != 1:
        raise n.unsupported("batch_group_count > 1")
    dn = p["dimension_numbers"]
    lhs, rhs, outs = dn.lhs_spec, dn.rhs_spec, dn.out_spec
    em = n.em
    xc = em.permute(x, list(lhs))
    wc = em.permute(w, list(rhs))
    out_actual = n.out.shape
    out_c = [out_actual[d] for d in outs]
    pads = [int(lo) for lo, _ in p["padding"]]
    if any(int(lo) < 0 or int(hi) < 0 for lo, hi in p["padding"]):
        raise n.unsupported("negative padding")
    y = conv_forward(em, xc, wc, None, [int(s) for s in p["window_strides"]], pads,
                     [int(d) for d in p["rhs_dilation"]], int(p["feature_group_count"]), out_c, n.out.dtype,
                     fp32=_precision(n))
    inverse = sorted(range(len(outs)), key=lambda k: outs[k])
    return em.permute(y, inverse)


@jax_prim("reduce_window_max", "reduce_window_min", "reduce_window_sum")
def lower_reduce_window(n: JaxNode) -> Value:
    x = n.tensor(0)
    p = n.params
    if any(d != 1 for d in p["base_dilation"]):
        raise n.unsupported("base dilation")
    t = vtype(x)
    wins: list[Window] = []
    for k, (size, win, st, pad, dil) in enumerate(zip(t.shape, p["window_dimensions"], p["window_strides"],
                                                      p["padding"], p["window_dilation"], strict=True)):
        if not wins and win == 1 and st == 1 and tuple(pad) == (0, 0):
            continue  # leading dims the window does not touch (batch, channels)
        wins.append(Window(size, n.out.shape[k], int(win), int(st), int(pad[0]), int(dil)))
    if not wins:
        return x
    kind = "max" if n.prim == "reduce_window_max" else "min" if n.prim == "reduce_window_min" else "sum"
    if kind == "min":
        raise n.unsupported("reduce_window_min")
    return pool(n.em, x, wins, kind, n.out.dtype)[0]


# ---- gathers -----------------------------------------------------------------------------------------------


@jax_prim("gather")
def lower_gather(n: JaxNode) -> Value:
    x, idx = n.tensor(0), n.tensor(1)
    dn = n.params["dimension_numbers"]
    xt, it = vtype(x), vtype(idx)
    em = n.em
    sizes = list(n.params["slice_sizes"])
    if it.shape[-1] != 1 or len(dn.start_index_map) != 1:
        raise n.unsupported("gathers over several axes at once")
    axis = dn.start_index_map[0]
    if not isinstance(xt.shape[axis], int):
        # Indices are data: at a smaller size (validation's) they would point past the axis.
        raise n.unsupported(f"a gather along the symbolic size {xt.shape[axis]}: the indices are data, so "
                            "that size stays fixed")
    batching = tuple(dn.operand_batching_dims)
    idx2 = em.reshape(idx, it.shape[:-1])
    if not batching:
        # take along one axis (x[ids], jnp.take)
        if tuple(dn.collapsed_slice_dims) != (axis,) or any(
                s != (1 if k == axis else d) for k, (s, d) in enumerate(zip(sizes, xt.shape, strict=True))):
            raise n.unsupported("gathers of partial slices")
        g = em.gather(x, idx2, axis)
        # solar.gather puts the index dims where the axis was; XLA puts them where offset_dims are not.
        nb = vtype(idx2).rank
        gshape_labels = [("o", k) for k in range(axis)] + [("b", k) for k in range(nb)] + \
            [("o", k) for k in range(axis + 1, xt.rank)]
        out_rank = len(n.out.shape)
        offset = list(dn.offset_dims)
        labels: list[tuple[str, int]] = []
        operand_dims = [k for k in range(xt.rank) if k != axis]
        oi = iter(operand_dims)
        bi = iter(range(nb))
        for pos in range(out_rank):
            labels.append(("o", next(oi)) if pos in offset else ("b", next(bi)))
        perm = [gshape_labels.index(lab) for lab in labels]
        return em.permute(g, perm)
    # take_along_axis: an elementwise gather along `axis`, the other dims batched.
    if set(batching) | {axis} != set(range(xt.rank)) or any(s != 1 for s in sizes):
        raise n.unsupported("this form of batched gather")
    f = flat_index(em, xt.shape, idx2, axis)
    flat = em.reshape(x, (prod_dims(xt.shape),))
    return em.gather(flat, f, 0)


@jax_prim("while")
def lower_while(n: JaxNode) -> Value:
    """A while loop's trip count is data here (a traced bound or a data-dependent condition): SIR loops
    have static trip counts. `fori_loop` with Python-int bounds traces to `scan`, which is lowered."""
    raise n.unsupported("a while loop whose trip count is not known when tracing: give it a static bound, "
                        "e.g. jax.lax.fori_loop(0, N, body, init) with a Python int N (it traces to scan, which "
                        "becomes solar.for), or jax.lax.scan(body, init, length=N)")


@jax_prim("sort")
def lower_jax_sort(n: JaxNode) -> list[Value]:
    """`lax.sort` of one or more operands along `dimension` by the first (`num_keys = 1`): the keys sorted
    (stably), the other operands permuted alike. An operand that is an `iota` along the dimension (as
    jnp.argsort passes it) comes out as the sort's own index result; others are gathered by it."""
    if int(n.params.get("num_keys", 1)) != 1:
        raise n.unsupported("sorting by more than one key")
    operands = [n.tensor(k) for k in range(len(n.outs))]
    keys_type = vtype(operands[0])
    dim = norm_dim(int(n.params["dimension"]), keys_type.rank)
    em = n.em
    iotas = [k for k in range(1, len(operands)) if em.iotas.get(operands[k]) == dim]
    index_dtype = n.outs[iotas[0]].dtype if iotas else DType.I64
    try:
        keys, order = selection.sort(em, operands[0], dim, False, index_dtype)
    except ValueError as err:
        raise n.unsupported(str(err)) from None
    outs = [keys]
    for k, other in enumerate(operands[1:], start=1):
        if k in iotas and n.outs[k].dtype is index_dtype:
            outs.append(order)
        else:
            ot = vtype(other)
            flat = em.reshape(other, (prod_dims(ot.shape),))
            outs.append(em.reshape(em.gather(flat, flat_index(em, ot.shape, order, dim), 0), ot.shape))
    return outs
