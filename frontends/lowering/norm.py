"""Normalizations: batch (inference and batch statistics), layer, group, instance, RMS; F.normalize-style
vector norms live in reduction.py. Each is one kernel: statistics passes, then the normalizing pass."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from solar.ir.dtypes import DType
from solar.ir.expr import Expr, IntLit
from solar.ir.ops import Value
from solar.ir.types import Dim

from .conv import maybe_loops
from .core import (
    Emitter,
    LoweringError,
    _merge,
    acc_dtype,
    access,
    cast,
    count_expr,
    fcall,
    lit,
    loops,
    pointwise,
    ttype,
    vtype,
)
from .registry import TorchNode, torch_op

Affine = tuple[Value, Callable[[list[Expr]], list[Expr]]] | None  # a parameter and its index from X's index


def normalize_kernel(em: Emitter, x: Value, red: Sequence[int], eps: float, weight: Affine, bias: Affine,
                     out_dtype: DType, center: bool = True, stats: bool = False) -> list[Value]:
    """`(X − mean) · rsqrt(var + eps) · W + B` with statistics over the dims `red` of X (RMS norm when not
    `center`). With `stats`, also returns the mean and rstd (shaped like X with `red` dims of size 1)."""
    t = vtype(x)
    rank = t.rank
    red = sorted(red)
    kept = [k for k in range(rank) if k not in red]
    acc_t = acc_dtype(out_dtype)
    kshape = [t.shape[k] for k in kept]
    rshape = [t.shape[k] for k in red]
    bindings = [(x, "X")]
    if weight is not None:
        bindings.append((weight[0], "W"))
    if bias is not None:
        bindings.append((bias[0], "Bias"))
    stat_shape = [1 if k in red else d for k, d in enumerate(t.shape)]
    outs = [("Y", ttype(t.shape, out_dtype))]
    if stats:
        outs += [("Mean", ttype(stat_shape, acc_t)), ("Rstd", ttype(stat_shape, acc_t))]
    kb = em.kernel(bindings, outs)
    count = count_expr(rshape, acc_t)
    if center:
        kb.local("s", ttype(kshape, acc_t))
        kb.local("m", ttype(kshape, acc_t))
    kb.local("q", ttype(kshape, acc_t))
    kb.local("rs", ttype(kshape, acc_t))
    with loops(kb, kshape, "i") as kidx:
        def xval(ridx: list[Expr]) -> Expr:
            return cast(access("X", _merge(rank, kept, kidx, red, ridx)), t.dtype, acc_t)

        if center:
            with loops(kb, rshape, "r") as ridx:
                kb.reduce(access("s", kidx), "+=", xval(ridx))
            kb.assign(access("m", kidx), access("s", kidx) / count)
        with loops(kb, rshape, "r") as ridx:
            dev = xval(ridx) - access("m", kidx) if center else xval(ridx)
            kb.reduce(access("q", kidx), "+=", dev * dev)
        kb.assign(access("rs", kidx), fcall("rsqrt", access("q", kidx) / count + lit(eps, acc_t)))
        with loops(kb, rshape, "r") as ridx:
            full = _merge(rank, kept, kidx, red, ridx)
            y = (xval(ridx) - access("m", kidx) if center else xval(ridx)) * access("rs", kidx)
            if weight is not None:
                y = y * cast(access("W", weight[1](full)), vtype(weight[0]).dtype, acc_t)
            if bias is not None:
                y = y + cast(access("Bias", bias[1](full)), vtype(bias[0]).dtype, acc_t)
            kb.assign(access("Y", full), cast(y, acc_t, out_dtype))
        if stats:
            sidx = _merge(rank, kept, kidx, red, [IntLit(0)] * len(red))
            kb.assign(access("Mean", sidx), access("m", kidx) if center else lit(0, acc_t))
            kb.assign(access("Rstd", sidx), access("rs", kidx))
    return list(kb.results)


def _trailing(p: Value | None, rank: int) -> Affine:
    if not isinstance(p, Value):
        return None
    k = vtype(p).rank
    return p, lambda full: full[rank - k:]


def _channel(p: Value | None) -> Affine:
    if not isinstance(p, Value):
        return None
    return p, lambda full: [full[1]]


@torch_op("layer_norm", "native_layer_norm")
def lower_layer_norm(n: TorchNode) -> Value | list[Value]:
    x = n.tensor("input")
    rank = vtype(x).rank
    k = len(n["normalized_shape"])
    red = list(range(rank - k, rank))
    stats = n.op == "aten::native_layer_norm"
    eps = n.get("eps", 1e-5)
    w, b = _trailing(n.args.get("weight"), rank), _trailing(n.args.get("bias"), rank)
    out = normalize_kernel(n.em, x, red, eps, w, b, n.out.dtype, stats=stats)
    return out if stats else out[0]


@torch_op("rms_norm", "_fused_rms_norm")
def lower_rms_norm(n: TorchNode) -> Value | list[Value]:
    x = n.tensor("input")
    t = vtype(x)
    k = len(n["normalized_shape"])
    red = list(range(t.rank - k, t.rank))
    eps = n.args.get("eps")
    if eps is None:  # PyTorch's default: the machine epsilon of the input's element type
        eps = t.dtype.eps
    out = normalize_kernel(n.em, x, red, eps, _trailing(n.args.get("weight"), t.rank), None, n.out.dtype,
                           center=False, stats=n.op == "aten::_fused_rms_norm")
    return out if n.op == "aten::_fused_rms_norm" else out[0]


def batch_norm_inference(em: Emitter, x: Value, w: Value | None, b: Value | None, rm: Value, rv: Value,
                         eps: float, out_dtype: DType) -> Value:
    """`(X − mean[c]) · rsqrt(var[c] + eps) · W[c] + B[c]`, one elementwise kernel."""
    t = vtype(x)
    acc_t = acc_dtype(out_dtype)
    bindings = [(x, "X"), (rm, "RM"), (rv, "RV")]
    if w is not None:
        bindings.append((w, "W"))
    if b is not None:
        bindings.append((b, "Bias"))
    kb = em.kernel(bindings, [("Y", ttype(t.shape, out_dtype))])
    with loops(kb, t.shape, "i") as idx:
        c = [idx[1]] if t.rank > 1 else [idx[0]]

        def par(name: str, v: Value) -> Expr:
            return cast(access(name, c), vtype(v).dtype, acc_t)

        y = (cast(access("X", idx), t.dtype, acc_t) - par("RM", rm)) * fcall("rsqrt", par("RV", rv) + lit(eps, acc_t))
        if w is not None:
            y = y * par("W", w)
        if b is not None:
            y = y + par("Bias", b)
        kb.assign(access("Y", idx), cast(y, acc_t, out_dtype))
    return kb.results[0]


def _opt(v: object) -> Value | None:
    return v if isinstance(v, Value) else None


@torch_op("batch_norm", "_native_batch_norm_legit_no_training", "_native_batch_norm_legit", "native_batch_norm",
          "_native_batch_norm_legit_functional", "cudnn_batch_norm", "_batch_norm_impl_index")
def lower_batch_norm(n: TorchNode) -> Value | list[Value | None]:
    x = n.tensor("input")
    w, b = _opt(n.args.get("weight")), _opt(n.args.get("bias"))
    rm, rv = _opt(n.args.get("running_mean")), _opt(n.args.get("running_var"))
    training = bool(n.args.get("training", False))
    eps = n.get("eps", 1e-5)
    rank = vtype(x).rank
    multi = n.op != "aten::batch_norm"
    if not training and rm is not None and rv is not None:
        y = batch_norm_inference(n.em, x, w, b, rm, rv, eps, n.out.dtype)
        return [y, None, None] if multi else y
    # Batch statistics (training mode or no running stats): normalize over every dim but the channels.
    red = [0, *range(2, rank)]
    outs = normalize_kernel(n.em, x, red, eps, _channel(w), _channel(b), n.out.dtype, stats=multi)
    if not multi:
        return outs[0]
    # mean and rstd come back per channel.
    c = vtype(x).shape[1]
    mean = n.em.reshape(outs[1], (c,))
    rstd = n.em.reshape(outs[2], (c,))
    # The CPU kernel returns a half-type input's statistics in that type (autocast's bf16 batch norm); the
    # running statistics are updated from the f32 ones. `aten.batch_norm` has one result: no statistics.
    saved = [mean, rstd]
    stat_types = [o.dtype if o is not None else None for o in n.outs[1:3]]
    if len(stat_types) == 2 and stat_types[0] is not None and stat_types[0] != vtype(mean).dtype:
        saved = [pointwise(n.em, [v], t or stat_types[0], lambda a: a[0], compute=vtype(v).dtype)
                 for v, t in zip((mean, rstd), stat_types, strict=True)]
    if n.op != "aten::_native_batch_norm_legit_functional":
        return [outs[0], *saved]
    # The functional form of training (export's functional graph) also returns the updated running
    # statistics, which become the buffers' new values: the momentum-weighted mean and unbiased variance.
    if rm is None or rv is None:
        return [outs[0], *saved, None, None]
    return [outs[0], *saved, *running_stats(n.em, rm, rv, mean, rstd, float(n.get("momentum", 0.1)), eps,
                                            [vtype(x).shape[k] for k in red])]


def running_stats(em: Emitter, rm: Value, rv: Value, mean: Value, rstd: Value, momentum: float, eps: float,
                  reduced: Sequence[Dim]) -> list[Value]:
    """`(1 − m)·running_mean + m·mean` and `(1 − m)·running_var + m·var·n/(n − 1)` per channel, with the
    batch variance from rstd (var = rstd⁻² − eps): two elementwise kernels over the channels."""
    dtype = vtype(rm).dtype
    acc_t = acc_dtype(dtype)
    n = count_expr(reduced, acc_t)
    keep = 1.0 - momentum
    new_mean = pointwise(em, [rm, mean], dtype, lambda a: lit(keep, acc_t) * a[0] + lit(momentum, acc_t) * a[1],
                         compute=acc_t)
    new_var = pointwise(em, [rv, rstd], dtype, lambda a: lit(keep, acc_t) * a[0] + lit(momentum, acc_t) * (
        lit(1.0, acc_t) / (a[1] * a[1]) - lit(eps, acc_t)) * n / (n - lit(1.0, acc_t)), compute=acc_t)
    return [new_mean, new_var]


def group_norm(em: Emitter, x: Value, groups: int, w: Value | None, b: Value | None, eps: float,
               out_dtype: DType, stats: bool = False) -> list[Value]:
    """Statistics per (sample, group) over the group's channels and all spatial positions."""
    t = vtype(x)
    n_, c, *sp = t.shape
    if not isinstance(c, int) or c % groups:
        raise LoweringError(f"group norm with {c} channels in {groups} groups")
    cg = c // groups
    acc_t = acc_dtype(out_dtype)
    bindings = [(x, "X")] + ([(w, "W")] if w is not None else []) + ([(b, "Bias")] if b is not None else [])
    outs = [("Y", ttype(t.shape, out_dtype))]
    if stats:
        outs += [("Mean", ttype([n_, groups], acc_t)), ("Rstd", ttype([n_, groups], acc_t))]
    kb = em.kernel(bindings, outs)
    for name in ("s", "m", "q", "rs"):
        kb.local(name, ttype([n_, groups], acc_t))
    red_sizes: list[Dim] = [cg, *sp]
    count = count_expr(red_sizes, acc_t)
    with loops(kb, [n_], "n") as (ni,), maybe_loops(kb, [groups], ["g"]) as (g,):
        sidx = [ni, g]

        def chan(ci: Expr) -> Expr:
            return ci if groups == 1 else (IntLit(cg) * g + ci if cg != 1 else g)

        def xval(ci: Expr, sidx_: list[Expr]) -> Expr:
            return cast(access("X", [ni, chan(ci), *sidx_]), t.dtype, acc_t)

        with maybe_loops(kb, [cg], ["c"]) as (ci,), loops(kb, sp, "r") as ps:
            kb.reduce(access("s", sidx), "+=", xval(ci, ps))
        kb.assign(access("m", sidx), access("s", sidx) / count)
        with maybe_loops(kb, [cg], ["c"]) as (ci,), loops(kb, sp, "r") as ps:
            dev = xval(ci, ps) - access("m", sidx)
            kb.reduce(access("q", sidx), "+=", dev * dev)
        kb.assign(access("rs", sidx), fcall("rsqrt", access("q", sidx) / count + lit(eps, acc_t)))
        with maybe_loops(kb, [cg], ["c"]) as (ci,), loops(kb, sp, "r") as ps:
            ch = chan(ci)
            y = (xval(ci, ps) - access("m", sidx)) * access("rs", sidx)
            if w is not None:
                y = y * cast(access("W", [ch]), vtype(w).dtype, acc_t)
            if b is not None:
                y = y + cast(access("Bias", [ch]), vtype(b).dtype, acc_t)
            kb.assign(access("Y", [ni, ch, *ps]), cast(y, acc_t, out_dtype))
        if stats:
            kb.assign(access("Mean", sidx), access("m", sidx))
            kb.assign(access("Rstd", sidx), access("rs", sidx))
    return list(kb.results)


@torch_op("group_norm", "native_group_norm")
def lower_group_norm(n: TorchNode) -> Value | list[Value]:
    x = n.tensor("input")
    groups = n.args.get("num_groups", n.args.get("group"))
    stats = n.op == "aten::native_group_norm"
    out = group_norm(n.em, x, groups, _opt(n.args.get("weight")), _opt(n.args.get("bias")), n.get("eps", 1e-5),
                     n.out.dtype, stats=stats)
    return out if stats else out[0]


@torch_op("instance_norm")
def lower_instance_norm(n: TorchNode) -> Value:
    x = n.tensor("input")
    t = vtype(x)
    use_input_stats = n.get("use_input_stats", True)
    w, b = _opt(n.args.get("weight")), _opt(n.args.get("bias"))
    eps = n.get("eps", 1e-5)
    if not use_input_stats:
        rm, rv = _opt(n.args.get("running_mean")), _opt(n.args.get("running_var"))
        if rm is None or rv is None:
            raise n.unsupported("instance norm without input statistics needs running statistics")
        return batch_norm_inference(n.em, x, w, b, rm, rv, eps, n.out.dtype)
    c = t.shape[1]
    if not isinstance(c, int):
        raise n.unsupported("instance norm with symbolic channels")
    # Statistics per (sample, channel) over the spatial dims.
    return normalize_kernel(n.em, x, list(range(2, t.rank)), eps, _channel(w), _channel(b), n.out.dtype)[0]
