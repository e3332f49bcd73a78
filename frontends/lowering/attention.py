"""Scaled dot-product attention as one kernel (a fused attention library kernel): scores, a stable softmax
and the weighted sum of values. A causal mask makes every loop over keys triangular (`j < i + 1`), so
masked positions are never iterated and lifting counts only the work a causal kernel does.

Precision as the fast kernels run it (docs/sol.md, "Precision per op family"): scores and softmax in f32,
and the probabilities P rounded to V's half-precision type before P·V, as FlashAttention and cuDNN's fused
attention feed the tensor cores, so both products are half-precision contractions when the inputs are."""

from __future__ import annotations

import math

from solar.ir.dtypes import DType
from solar.ir.expr import Binary, Expr, IntLit
from solar.ir.ops import Value
from solar.ir.types import Dim, dims_equal

from .core import (
    Emitter,
    LoweringError,
    acc_dtype,
    access,
    bcast_index,
    broadcast_shapes,
    cast,
    count_expr,
    fcall,
    lit,
    loops,
    select,
    ttype,
    vtype,
)
from .registry import TorchNode, torch_op


def sdpa(em: Emitter, q: Value, k: Value, v: Value, mask: Value | None, causal: bool, scale: float | None,
         gqa: bool, out_dtype: DType, with_lse: bool = False) -> Value | list[Value]:
    """The attention kernel; `with_lse` adds a second result, each row's log-sum-exp of its scaled scores
    (f32, what a training forward saves for the backward)."""
    qt, kt, vt = vtype(q), vtype(k), vtype(v)
    *qb, seq_q, e = qt.shape
    *kb_, seq_k, _ = kt.shape
    *vb, _, ev = vt.shape
    group = 1
    if gqa and qb and kb_ and qb[-1] != kb_[-1]:
        hq, hk = qb[-1], kb_[-1]
        if not isinstance(hq, int) or not isinstance(hk, int) or hq % hk:
            raise LoweringError("grouped-query attention needs static head counts that divide")
        group = hq // hk
    batch = tuple(qb) if group > 1 else broadcast_shapes(tuple(qb), tuple(kb_), tuple(vb))
    acc_t = acc_dtype(out_dtype)
    # The default scale 1/sqrt(E): a literal for a static head size, else an expression of its size
    # parameter (a constant of the program, so the counts see one multiply per score either way).
    if scale is not None:
        factor: Expr = lit(scale, acc_t)
    elif isinstance(e, int):
        factor = lit(1.0 / math.sqrt(e), acc_t)
    else:
        factor = fcall("rsqrt", count_expr([e], acc_t))
    bindings = [(q, "Q"), (k, "K"), (v, "V")] + ([(mask, "M")] if mask is not None else [])
    out_shape = (*batch, seq_q, ev)
    results = [("O", ttype(out_shape, out_dtype))]
    if with_lse:
        results.append(("LSE", ttype((*batch, seq_q), DType.F32)))
    kern = em.kernel(bindings, results)
    em.mark_precision(kern, "matmul", qt.dtype)  # its two products run as the framework's f32 matmuls
    scores: tuple[Dim, ...] = (*batch, seq_q, seq_k)
    kern.local("S", ttype(scores, acc_t))
    # P in V's type when that is a narrow float (f16, bf16): the P·V product runs on the same tensor cores as
    # Q·Kᵀ; f32 (and f64) attention keeps P in the accumulator type, its products priced by `fp32_precision`.
    p_t = vt.dtype if vt.dtype.is_float and acc_dtype(vt.dtype) != vt.dtype else acc_t
    kern.local("P", ttype(scores, p_t))
    kern.local("mx", ttype((*batch, seq_q), acc_t))
    kern.local("sum", ttype((*batch, seq_q), acc_t))
    kern.local("acc", ttype(out_shape, acc_t))

    def kv_batch(bidx: list[Expr], shape: list[Dim]) -> tuple[Expr, ...]:
        if group > 1:
            return (*bidx[:-1], Binary("floordiv", bidx[-1], IntLit(group)))
        return bcast_index(tuple(shape), batch, bidx)

    with loops(kern, batch, "b") as bidx, loops(kern, [seq_q], "i") as (i,):
        upper: Expr | Dim = Binary("+", i, IntLit(1)) if causal else seq_k
        row = [*bidx, i]

        def logit(j: Expr) -> Expr:
            s = access("S", [*bidx, i, j]) * factor
            if mask is None:
                return s
            mt = vtype(mask)
            m = access("M", bcast_index(mt.shape, scores, [*bidx, i, j]))
            return select(m, s, lit(-math.inf, acc_t)) if mt.dtype.is_bool else s + cast(m, mt.dtype, acc_t)

        with kern.loop("j", 0, upper) as j, loops(kern, [e], "d") as (d,):
            qv = cast(access("Q", [*bcast_index(tuple(qb), batch, bidx), i, d]), qt.dtype, acc_t)
            kv = cast(access("K", [*kv_batch(bidx, kb_), j, d]), kt.dtype, acc_t)
            kern.reduce(access("S", [*bidx, i, j]), "+=", qv * kv)
        with kern.loop("j", 0, upper) as j:
            kern.reduce(access("mx", row), "max=", logit(j))
        with kern.loop("j", 0, upper) as j:
            kern.reduce(access("sum", row), "+=", fcall("exp", logit(j) - access("mx", row)))
        with kern.loop("j", 0, upper) as j:
            prob = fcall("exp", logit(j) - access("mx", row)) / access("sum", row)
            kern.assign(access("P", [*bidx, i, j]), cast(prob, acc_t, p_t))
        with loops(kern, [ev], "d") as (d,):
            with kern.loop("j", 0, upper) as j:
                vv = cast(access("V", [*kv_batch(bidx, vb), j, d]), vt.dtype, acc_t)
                pv = cast(access("P", [*bidx, i, j]), p_t, acc_t)
                kern.reduce(access("acc", [*bidx, i, d]), "+=", pv * vv)
            kern.assign(access("O", [*bidx, i, d]), cast(access("acc", [*bidx, i, d]), acc_t, out_dtype))
        if with_lse:
            lse = access("mx", row) + fcall("log", access("sum", row))
            kern.assign(access("LSE", row), cast(lse, acc_t, DType.F32))
    return list(kern.results) if with_lse else kern.results[0]


@torch_op("scaled_dot_product_attention")
def lower_sdpa(n: TorchNode) -> Value:
    if n.get("dropout_p", 0.0):
        raise n.unsupported("attention dropout is random (dropout_p > 0)")
    mask = n.args.get("attn_mask")
    causal = bool(n.get("is_causal", False))
    q, k = n.tensor("query"), n.tensor("key")
    if causal and mask is not None:
        raise n.unsupported("is_causal together with attn_mask")
    if causal and not _same(vtype(q).shape[-2], vtype(k).shape[-2]):
        raise n.unsupported("causal attention with different query and key lengths")
    out = sdpa(n.em, q, k, n.tensor("value"), mask if isinstance(mask, Value) else None, causal,
               n.args.get("scale"), bool(n.get("enable_gqa", False)), n.out.dtype)
    assert isinstance(out, Value)
    return out


def _same(a: Dim, b: Dim) -> bool:
    return dims_equal(a, b)
