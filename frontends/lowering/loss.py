"""Losses and similarity measures, one kernel each: the per-element (or per-row) loss and, for 'mean' and
'sum', its reduction. Class-index targets are read without indirect access: the class loop compares
`T[row] == c`, which is the one-hot selection a fused loss kernel performs."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from solar.ir.builder import KernelBuilder
from solar.ir.dtypes import DType
from solar.ir.expr import Binary, Expr, IntLit, Unary
from solar.ir.ops import Value
from solar.ir.types import Dim

from .core import (
    Emitter,
    acc_dtype,
    access,
    bcast_index,
    broadcast_shapes,
    cast,
    count_expr,
    fcall,
    lit,
    loops,
    norm_dim,
    select,
    smax,
    smin,
    ttype,
    vtype,
)
from .registry import TorchNode, torch_op

NONE, MEAN, SUM = 0, 1, 2


def _finish(kb: KernelBuilder, reduction: int, count: Expr, acc_t: DType, out_dtype: DType) -> None:
    value: Expr = access("acc", [])
    if reduction == MEAN:
        value = value / count
    kb.assign(access("Y", []), cast(value, acc_t, out_dtype))


def elementwise_loss(em: Emitter, inputs: Sequence[Value | float], fn: Callable[[list[Expr], DType], Expr],
                     reduction: int, out_dtype: DType,
                     let: Callable[[list[Expr], DType], Expr] | None = None) -> Value:
    """`loss = reduce(fn(inputs...))` over the broadcast shape of the tensor inputs, one kernel.

    `let(inputs)`, when given, is computed once per element into an on-chip local and passed to `fn` as a
    last argument: a subexpression used several times (|x − y| in smooth L1) is then counted once, as a
    kernel computes it once."""
    tensors = [x for x in inputs if isinstance(x, Value)]
    shape = broadcast_shapes(*[vtype(x).shape for x in tensors])
    acc_t = acc_dtype(out_dtype)
    names = ["A", "B", "C", "E", "F"]
    bindings = [(x, names[k]) for k, x in enumerate(tensors)]
    out_shape = shape if reduction == NONE else ()
    kb = em.kernel(bindings, [("Y", ttype(out_shape, out_dtype))])
    if reduction != NONE:
        kb.local("acc", ttype((), acc_t))
    if let is not None:
        kb.local("d", ttype(shape, acc_t))
    with loops(kb, shape) as idx:
        args: list[Expr] = []
        k = 0
        for x in inputs:
            if isinstance(x, Value):
                t = vtype(x)
                args.append(cast(access(names[k], bcast_index(t.shape, shape, idx)), t.dtype, acc_t))
                k += 1
            else:
                args.append(lit(x, acc_t))
        if let is not None:
            kb.assign(access("d", idx), let(args, acc_t))
            args.append(access("d", idx))
        value = fn(args, acc_t)
        if reduction == NONE:
            kb.assign(access("Y", idx), cast(value, acc_t, out_dtype))
        else:
            kb.reduce(access("acc", []), "+=", value)
    if reduction != NONE:
        _finish(kb, reduction, count_expr(shape, acc_t), acc_t, out_dtype)
    return kb.results[0]


def _red(n: TorchNode) -> int:
    r = n.get("reduction", MEAN)
    if isinstance(r, str):
        return {"none": NONE, "mean": MEAN, "sum": SUM}[r]
    return int(r)


@torch_op("mse_loss")
def lower_mse(n: TorchNode) -> Value:
    return elementwise_loss(n.em, [n.tensor("self"), n.tensor("target")], lambda e, dt: e[2] * e[2], _red(n),
                            n.out.dtype, let=lambda e, dt: e[0] - e[1])


@torch_op("l1_loss")
def lower_l1(n: TorchNode) -> Value:
    return elementwise_loss(n.em, [n.tensor("self"), n.tensor("target")], lambda e, dt: fcall("abs", e[0] - e[1]),
                            _red(n), n.out.dtype)


@torch_op("smooth_l1_loss")
def lower_smooth_l1(n: TorchNode) -> Value:
    beta = float(n.get("beta", 1.0))

    def fn(e: list[Expr], dt: DType) -> Expr:
        d = e[2]
        if beta == 0:
            return d
        square = d * d if beta == 0.5 else lit(0.5 / beta, dt) * d * d
        return select(Binary("<", d, lit(beta, dt)), square, d - lit(0.5 * beta, dt))

    return elementwise_loss(n.em, [n.tensor("self"), n.tensor("target")], fn, _red(n), n.out.dtype,
                            let=lambda e, dt: fcall("abs", e[0] - e[1]))


@torch_op("huber_loss")
def lower_huber(n: TorchNode) -> Value:
    delta = float(n.get("delta", 1.0))

    def fn(e: list[Expr], dt: DType) -> Expr:
        d = e[2]
        return select(Binary("<", d, lit(delta, dt)), lit(0.5, dt) * d * d, lit(delta, dt) * (d - lit(0.5 * delta, dt)))

    return elementwise_loss(n.em, [n.tensor("self"), n.tensor("target")], fn, _red(n), n.out.dtype,
                            let=lambda e, dt: fcall("abs", e[0] - e[1]))


@torch_op("kl_div")
def lower_kl_div(n: TorchNode) -> Value:
    log_target = n.get("log_target", False)

    def fn(e: list[Expr], dt: DType) -> Expr:
        x, t = e
        if log_target:
            return fcall("exp", t) * (t - x)
        # xlogy(t, t) − t·x, with 0·log 0 = 0.
        return select(Binary(">", t, lit(0, dt)), t * fcall("log", t), lit(0, dt)) - t * x

    return elementwise_loss(n.em, [n.tensor("self"), n.tensor("target")], fn, _red(n), n.out.dtype)


@torch_op("hinge_embedding_loss")
def lower_hinge(n: TorchNode) -> Value:
    margin = float(n.get("margin", 1.0))

    def fn(e: list[Expr], dt: DType) -> Expr:
        x, t = e
        pos = select(Binary("==", t, lit(1, dt)), x, lit(0, dt))
        neg = select(Binary("==", t, lit(-1, dt)), smax(lit(margin, dt) - x, lit(0, dt)), lit(0, dt))
        return pos + neg

    return elementwise_loss(n.em, [n.tensor("self"), n.tensor("target")], fn, _red(n), n.out.dtype)


@torch_op("soft_margin_loss")
def lower_soft_margin(n: TorchNode) -> Value:
    return elementwise_loss(n.em, [n.tensor("self"), n.tensor("target")],
                            lambda e, dt: fcall("log1p", fcall("exp", Unary("-", e[1] * e[0]))), _red(n), n.out.dtype)


@torch_op("margin_ranking_loss")
def lower_margin_ranking(n: TorchNode) -> Value:
    margin = float(n.get("margin", 0.0))
    return elementwise_loss(
        n.em, [n.tensor("input1"), n.tensor("input2"), n.tensor("target")],
        lambda e, dt: smax(Unary("-", e[2]) * (e[0] - e[1]) + lit(margin, dt), lit(0, dt)), _red(n), n.out.dtype)


@torch_op("binary_cross_entropy")
def lower_bce(n: TorchNode) -> Value:
    w = n.args.get("weight")

    def fn(e: list[Expr], dt: DType) -> Expr:
        x, t = e[0], e[1]
        # torch clamps each log at −100 so that log(0) stays finite.
        lx = smax(fcall("log", x), lit(-100, dt))
        l1x = smax(fcall("log", lit(1, dt) - x), lit(-100, dt))
        loss = Unary("-", t * lx + (lit(1, dt) - t) * l1x)
        return loss * e[2] if len(e) > 2 else loss

    ins = [n.tensor("self"), n.tensor("target")] + ([w] if isinstance(w, Value) else [])
    return elementwise_loss(n.em, ins, fn, _red(n), n.out.dtype)


@torch_op("binary_cross_entropy_with_logits")
def lower_bce_logits(n: TorchNode) -> Value:
    w, pw = n.args.get("weight"), n.args.get("pos_weight")
    ins: list[Value | float] = [n.tensor("self"), n.tensor("target")]
    has_w = isinstance(w, Value)
    has_pw = isinstance(pw, Value)
    if has_w:
        ins.append(w)
    if has_pw:
        ins.append(pw)

    def fn(e: list[Expr], dt: DType) -> Expr:
        x, t = e[0], e[1]
        softplus_neg = fcall("log1p", fcall("exp", Unary("-", fcall("abs", x)))) + smax(Unary("-", x), lit(0, dt))
        if has_pw:
            p = e[3] if has_w else e[2]
            loss = (lit(1, dt) - t) * x + (lit(1, dt) + (p - lit(1, dt)) * t) * softplus_neg
        else:
            loss = (lit(1, dt) - t) * x + softplus_neg
        return loss * e[2] if has_w else loss

    return elementwise_loss(n.em, ins, fn, _red(n), n.out.dtype)


@torch_op("poisson_nll_loss")
def lower_poisson_nll(n: TorchNode) -> Value:
    log_input, full, eps = n.get("log_input", True), n.get("full", False), float(n.get("eps", 1e-8))
    if full:
        raise n.unsupported("poisson_nll_loss with full=True (Stirling term)")

    def fn(e: list[Expr], dt: DType) -> Expr:
        x, t = e
        return fcall("exp", x) - t * x if log_input else x - t * fcall("log", x + lit(eps, dt))

    return elementwise_loss(n.em, [n.tensor("input"), n.tensor("target")], fn, _red(n), n.out.dtype)


# ---- row-wise measures --------------------------------------------------------------------------------


def _rows(shape: Sequence[Dim], dim: int) -> tuple[list[int], list[Dim]]:
    kept = [k for k in range(len(shape)) if k != dim]
    return kept, [shape[k] for k in kept]


def _full(kidx: Sequence[Expr], kept: Sequence[int], dim: int, r: Expr, rank: int) -> list[Expr]:
    out: list[Expr] = [IntLit(0)] * rank
    for k, i in zip(kept, kidx, strict=True):
        out[k] = i
    out[dim] = r
    return out


@torch_op("cosine_similarity")
def lower_cosine_similarity(n: TorchNode) -> Value:
    a, b = n.tensor("x1"), n.tensor("x2")
    shape = broadcast_shapes(vtype(a).shape, vtype(b).shape)
    rank = len(shape)
    dim = norm_dim(n.get("dim", 1), rank)
    eps = float(n.get("eps", 1e-8))
    dt = n.out.dtype
    acc_t = acc_dtype(dt)
    kept, kshape = _rows(shape, dim)
    kb = n.em.kernel([(a, "A"), (b, "B")], [("Y", ttype(kshape, dt))])
    for name in ("w12", "w1", "w2"):
        kb.local(name, ttype(kshape, acc_t))
    with loops(kb, kshape, "i") as kidx:
        with loops(kb, [shape[dim]], "r") as (r,):
            full = _full(kidx, kept, dim, r, rank)
            x = cast(access("A", bcast_index(vtype(a).shape, shape, full)), vtype(a).dtype, acc_t)
            y = cast(access("B", bcast_index(vtype(b).shape, shape, full)), vtype(b).dtype, acc_t)
            kb.reduce(access("w12", kidx), "+=", x * y)
            kb.reduce(access("w1", kidx), "+=", x * x)
            kb.reduce(access("w2", kidx), "+=", y * y)
        den = fcall("sqrt", smax(access("w1", kidx) * access("w2", kidx), lit(eps * eps, acc_t)))
        kb.assign(access("Y", kidx), cast(access("w12", kidx) / den, acc_t, dt))
    return kb.results[0]


def _pnorm_terms(d: Expr, p: float, dt: DType) -> Expr:
    if p == 2:
        return d * d
    if p == 1:
        return fcall("abs", d)
    return fcall("pow", fcall("abs", d), lit(p, dt))


def _pnorm_finish(s: Expr, p: float, dt: DType) -> Expr:
    if p == 2:
        return fcall("sqrt", s)
    if p == 1:
        return s
    return fcall("pow", s, lit(1.0 / p, dt))


@torch_op("pairwise_distance")
def lower_pairwise_distance(n: TorchNode) -> Value:
    a, b = n.tensor("x1"), n.tensor("x2")
    p, eps, keepdim = float(n.get("p", 2.0)), float(n.get("eps", 1e-6)), n.get("keepdim", False)
    shape = broadcast_shapes(vtype(a).shape, vtype(b).shape)
    rank = len(shape)
    dim = rank - 1
    dt = n.out.dtype
    acc_t = acc_dtype(dt)
    kept, kshape = _rows(shape, dim)
    kb = n.em.kernel([(a, "A"), (b, "B")], [("Y", ttype(n.out.shape, dt))])
    kb.local("s", ttype(kshape, acc_t))
    with loops(kb, kshape, "i") as kidx:
        with loops(kb, [shape[dim]], "r") as (r,):
            full = _full(kidx, kept, dim, r, rank)
            x = cast(access("A", bcast_index(vtype(a).shape, shape, full)), vtype(a).dtype, acc_t)
            y = cast(access("B", bcast_index(vtype(b).shape, shape, full)), vtype(b).dtype, acc_t)
            kb.reduce(access("s", kidx), "+=", _pnorm_terms(x - y + lit(eps, acc_t), p, acc_t))
        oidx = [*kidx, IntLit(0)] if keepdim else list(kidx)
        kb.assign(access("Y", oidx), cast(_pnorm_finish(access("s", kidx), p, acc_t), acc_t, dt))
    return kb.results[0]


@torch_op("triplet_margin_loss")
def lower_triplet(n: TorchNode) -> Value:
    a, pos, neg = n.tensor("anchor"), n.tensor("positive"), n.tensor("negative")
    margin, p, eps = float(n.get("margin", 1.0)), float(n.get("p", 2.0)), float(n.get("eps", 1e-6))
    swap = n.get("swap", False)
    reduction = _red(n)
    shape = broadcast_shapes(vtype(a).shape, vtype(pos).shape, vtype(neg).shape)
    rank = len(shape)
    dim = rank - 1
    dt = n.out.dtype
    acc_t = acc_dtype(dt)
    kept, kshape = _rows(shape, dim)
    kb = n.em.kernel([(a, "A"), (pos, "P"), (neg, "N")], [("Y", ttype(kshape if reduction == NONE else (), dt))])
    for name in ("dp", "dn", "ds"):
        if name != "ds" or swap:
            kb.local(name, ttype(kshape, acc_t))
    if reduction != NONE:
        kb.local("acc", ttype((), acc_t))
    with loops(kb, kshape, "i") as kidx:
        with loops(kb, [shape[dim]], "r") as (r,):
            full = _full(kidx, kept, dim, r, rank)

            def rd(name: str, v: Value, full: list[Expr] = full) -> Expr:
                return cast(access(name, bcast_index(vtype(v).shape, shape, full)), vtype(v).dtype, acc_t)

            x, y, z = rd("A", a), rd("P", pos), rd("N", neg)
            kb.reduce(access("dp", kidx), "+=", _pnorm_terms(x - y + lit(eps, acc_t), p, acc_t))
            kb.reduce(access("dn", kidx), "+=", _pnorm_terms(x - z + lit(eps, acc_t), p, acc_t))
            if swap:
                kb.reduce(access("ds", kidx), "+=", _pnorm_terms(y - z + lit(eps, acc_t), p, acc_t))
        dpos = _pnorm_finish(access("dp", kidx), p, acc_t)
        dneg = _pnorm_finish(access("dn", kidx), p, acc_t)
        if swap:
            dneg = smin(dneg, _pnorm_finish(access("ds", kidx), p, acc_t))
        loss = smax(dpos - dneg + lit(margin, acc_t), lit(0, acc_t))
        if reduction == NONE:
            kb.assign(access("Y", kidx), cast(loss, acc_t, dt))
        else:
            kb.reduce(access("acc", []), "+=", loss)
    if reduction != NONE:
        _finish(kb, reduction, count_expr(kshape, acc_t), acc_t, dt)
    return kb.results[0]


@torch_op("cosine_embedding_loss")
def lower_cosine_embedding(n: TorchNode) -> Value:
    a, b, t = n.tensor("input1"), n.tensor("input2"), n.tensor("target")
    margin = float(n.get("margin", 0.0))
    reduction = _red(n)
    at = vtype(a)
    rank = at.rank
    dim = rank - 1
    dt = n.out.dtype
    acc_t = acc_dtype(dt)
    kept, kshape = _rows(at.shape, dim)
    kb = n.em.kernel([(a, "A"), (b, "B"), (t, "T")], [("Y", ttype(kshape if reduction == NONE else (), dt))])
    for name in ("w12", "w1", "w2"):
        kb.local(name, ttype(kshape, acc_t))
    if reduction != NONE:
        kb.local("acc", ttype((), acc_t))
    eps = 1e-12
    with loops(kb, kshape, "i") as kidx:
        with loops(kb, [at.shape[dim]], "r") as (r,):
            full = _full(kidx, kept, dim, r, rank)
            x = cast(access("A", full), at.dtype, acc_t)
            y = cast(access("B", full), vtype(b).dtype, acc_t)
            kb.reduce(access("w12", kidx), "+=", x * y)
            kb.reduce(access("w1", kidx), "+=", x * x)
            kb.reduce(access("w2", kidx), "+=", y * y)
        cos = access("w12", kidx) / fcall("sqrt", (access("w1", kidx) + lit(eps, acc_t))
                                          * (access("w2", kidx) + lit(eps, acc_t)))
        tv = cast(access("T", kidx), vtype(t).dtype, acc_t)
        loss = select(Binary("==", tv, lit(1, acc_t)), lit(1, acc_t) - cos,
                      select(Binary("==", tv, lit(-1, acc_t)), smax(cos - lit(margin, acc_t), lit(0, acc_t)),
                             lit(0, acc_t)))
        if reduction == NONE:
            kb.assign(access("Y", kidx), cast(loss, acc_t, dt))
        else:
            kb.reduce(access("acc", []), "+=", loss)
    if reduction != NONE:
        _finish(kb, reduction, count_expr(kshape, acc_t), acc_t, dt)
    return kb.results[0]


# ---- classification losses --------------------------------------------------------------------------


def class_loss(em: Emitter, x: Value, target: Value, weight: Value | None, reduction: int, ignore_index: int,
               smoothing: float, out_dtype: DType, log_probs: bool, total_weight: bool = False) -> list[Value]:
    """Cross entropy (from logits) or NLL (from log-probabilities) with class-index or probability targets.

    Input (N, C, d...) or (C); classes along dim 1 (dim 0 unbatched). Per row: the log-sum-exp (max, Σexp)
    unless the input already holds log-probabilities, the target's term selected by `T[row] == c` over the
    class loop (the weight likewise, when given), then the reduction: 'mean' divides by the summed weights
    of the rows not ignored, as torch does."""
    xt, tt = vtype(x), vtype(target)
    rank = xt.rank
    cdim = 0 if rank == 1 else 1
    kept, kshape = _rows(xt.shape, cdim)
    classes = xt.shape[cdim]
    acc_t = acc_dtype(out_dtype)
    probs = tt.dtype.is_float
    weighted = weight is not None
    bindings = [(x, "X"), (target, "T")] + ([(weight, "W")] if weight is not None else [])
    outs = [("Y", ttype(kshape if reduction == NONE else (), out_dtype))]
    if total_weight:
        outs.append(("TW", ttype((), out_dtype)))
    kb = em.kernel(bindings, outs)
    if not log_probs:
        kb.local("mx", ttype(kshape, acc_t))
        kb.local("se", ttype(kshape, acc_t))
        kb.local("lse", ttype(kshape, acc_t))
    kb.local("pick", ttype(kshape, acc_t))
    if weighted and not probs:
        kb.local("wt", ttype(kshape, acc_t))
    if smoothing and not probs:
        kb.local("sm", ttype(kshape, acc_t))
    if reduction != NONE:
        kb.local("acc", ttype((), acc_t))
        if not probs:
            kb.local("den", ttype((), acc_t))
    n_classes = count_expr([classes], acc_t)

    def wv(c: Expr) -> Expr:
        assert weight is not None
        return cast(access("W", [c]), vtype(weight).dtype, acc_t)

    with loops(kb, kshape, "i") as kidx:
        def xv(c: Expr) -> Expr:
            return cast(access("X", _full(kidx, kept, cdim, c, rank)), xt.dtype, acc_t)

        if not log_probs:
            with loops(kb, [classes], "c") as (c,):
                kb.reduce(access("mx", kidx), "max=", xv(c))
            with loops(kb, [classes], "c") as (c,):
                kb.reduce(access("se", kidx), "+=", fcall("exp", xv(c) - access("mx", kidx)))
            kb.assign(access("lse", kidx), fcall("log", access("se", kidx)) + access("mx", kidx))
        lse: Expr = lit(0, acc_t) if log_probs else access("lse", kidx)
        with loops(kb, [classes], "c") as (c,):
            if probs:
                tv = cast(access("T", _full(kidx, kept, cdim, c, rank)), tt.dtype, acc_t)
                if smoothing:
                    tv = tv * lit(1 - smoothing, acc_t) + lit(smoothing, acc_t) / n_classes
                term = tv * (lse - xv(c)) if not log_probs else Unary("-", tv * xv(c))
                kb.reduce(access("pick", kidx), "+=", wv(c) * term if weighted else term)
            else:
                hit = Binary("==", cast(access("T", kidx), tt.dtype, DType.I64), c)
                kb.reduce(access("pick", kidx), "+=", select(hit, xv(c), lit(0, acc_t)))
                if weighted:
                    kb.reduce(access("wt", kidx), "+=", select(hit, wv(c), lit(0, acc_t)))
                if smoothing:
                    dev = lse - xv(c)
                    kb.reduce(access("sm", kidx), "+=", wv(c) * dev if weighted else dev)
        if probs:
            loss: Expr = access("pick", kidx)
        else:
            valid = Binary("!=", cast(access("T", kidx), tt.dtype, DType.I64), IntLit(ignore_index))
            nll: Expr = lse - access("pick", kidx)
            if weighted:
                nll = nll * access("wt", kidx)
            if smoothing:
                nll = nll * lit(1 - smoothing, acc_t) + access("sm", kidx) * (lit(smoothing, acc_t) / n_classes)
            loss = select(valid, nll, lit(0, acc_t))
        if reduction == NONE:
            kb.assign(access("Y", kidx), cast(loss, acc_t, out_dtype))
        else:
            kb.reduce(access("acc", []), "+=", loss)
            if not probs:
                w_row = access("wt", kidx) if weighted else lit(1, acc_t)
                kb.reduce(access("den", []), "+=", select(valid, w_row, lit(0, acc_t)))
    if reduction != NONE:
        value: Expr = access("acc", [])
        if reduction == MEAN:
            value = value / (count_expr(kshape, acc_t) if probs else access("den", []))
        kb.assign(access("Y", []), cast(value, acc_t, out_dtype))
    if total_weight:
        tw: Expr = access("den", []) if reduction != NONE and not probs else lit(0, acc_t)
        kb.assign(access("TW", []), cast(tw, acc_t, out_dtype))
    return list(kb.results)


@torch_op("cross_entropy_loss")
def lower_cross_entropy(n: TorchNode) -> Value:
    w = n.args.get("weight")
    return class_loss(n.em, n.tensor("self"), n.tensor("target"), w if isinstance(w, Value) else None, _red(n),
                      n.get("ignore_index", -100), float(n.get("label_smoothing", 0.0)), n.out.dtype,
                      log_probs=False)[0]


@torch_op("nll_loss", "nll_loss_nd", "nll_loss2d")
def lower_nll(n: TorchNode) -> Value:
    w = n.args.get("weight")
    return class_loss(n.em, n.tensor("self"), n.tensor("target"), w if isinstance(w, Value) else None, _red(n),
                      n.get("ignore_index", -100), 0.0, n.out.dtype, log_probs=True)[0]


@torch_op("nll_loss_forward", "nll_loss2d_forward")
def lower_nll_forward(n: TorchNode) -> list[Value]:
    w = n.args.get("weight")
    outs = class_loss(n.em, n.tensor("self"), n.tensor("target"), w if isinstance(w, Value) else None, _red(n),
                      n.get("ignore_index", -100), 0.0, n.out.dtype, log_probs=True, total_weight=True)
    return outs


@torch_op("cdist", "_cdist_forward", "_euclidean_dist")
def lower_cdist(n: TorchNode) -> Value:
    a, b = n.tensor("x1"), n.tensor("x2")
    p = float(n.get("p", 2.0))
    at, bt = vtype(a), vtype(b)
    dt = n.out.dtype
    acc_t = acc_dtype(dt)
    out = n.out.shape
    batch = list(out[:-2])
    kb = n.em.kernel([(a, "A"), (b, "B")], [("Y", ttype(out, dt))])
    kb.local("s", ttype(out, acc_t))
    with loops(kb, out, "i") as idx:
        *bi, i, j = idx
        with loops(kb, [at.shape[-1]], "r") as (r,):
            ai = [*bcast_index(at.shape[:-2], tuple(batch), bi), i, r]
            bj = [*bcast_index(bt.shape[:-2], tuple(batch), bi), j, r]
            d = cast(access("A", ai), at.dtype, acc_t) - cast(access("B", bj), bt.dtype, acc_t)
            kb.reduce(access("s", idx), "+=", _pnorm_terms(d, p, acc_t))
        kb.assign(access("Y", idx), cast(_pnorm_finish(access("s", idx), p, acc_t), acc_t, dt))
    return kb.results[0]
