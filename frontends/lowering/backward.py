"""Backward ops of a training step's joint graph that stay whole (frontends/torch_train.py): the fused
attention's forward with its log-sum-exp and its backward, and the convolution's backward.

Counts are those of the direct algorithms. The attention backward recomputes the probabilities from Q, K and
the saved log-sum-exp (the forward saves no S×S matrix), so it holds five contractions to the forward's two:
S = Q·Kᵀ, dP = dO·Vᵀ, dQ = dS·K, dK = dSᵀ·Q and dV = Pᵀ·dO; a causal mask makes every one triangular.
The convolution's input gradient is the transposed convolution of the output gradient (scatter form, the
forward's padding guards), its weight gradient the correlation of the input with the output gradient: each
has exactly the forward's multiply-adds.
"""

from __future__ import annotations

import math
from typing import Any

from solar.ir.dtypes import DType
from solar.ir.expr import Binary, Expr, IntLit
from solar.ir.ops import Value

from .attention import sdpa
from .conv import _affine, _chan, conv_transposed, maybe_loops, tuple_n
from .core import (
    LoweringError,
    acc_dtype,
    access,
    cast,
    conj,
    dexpr,
    fcall,
    guard,
    lit,
    loops,
    ttype,
    vtype,
)
from .registry import TorchNode, torch_op


def _one_type(n: TorchNode, *values: Value) -> DType:
    dtype = vtype(values[0]).dtype
    if any(vtype(v).dtype != dtype for v in values):
        raise n.unsupported("the backward of attention over inputs of different types")
    return dtype


@torch_op("_scaled_dot_product_flash_attention_for_cpu")
def lower_flash_forward(n: TorchNode) -> list[Value]:
    if n.get("dropout_p", 0.0):
        raise n.unsupported("attention dropout is random (dropout_p > 0)")
    mask = n.args.get("attn_mask")
    if isinstance(mask, Value):
        raise n.unsupported("an attention mask in a training step's fused attention (use is_causal)")
    q, k = n.tensor("query"), n.tensor("key")
    # Fewer key-value heads than query heads: grouped-query attention, each read where its group reads it.
    gqa = vtype(q).shape[:-3] == vtype(k).shape[:-3] and vtype(q).shape[-3] != vtype(k).shape[-3]
    out = sdpa(n.em, q, k, n.tensor("value"), None, bool(n.get("is_causal", False)),
               n.args.get("scale"), gqa, n.outs[0].dtype if n.outs[0] else vtype(q).dtype, with_lse=True)
    assert isinstance(out, list)
    return out


@torch_op("_scaled_dot_product_flash_attention_for_cpu_backward")
def lower_flash_backward(n: TorchNode) -> list[Value]:
    if n.get("dropout_p", 0.0):
        raise n.unsupported("attention dropout is random (dropout_p > 0)")
    if isinstance(n.args.get("attn_mask"), Value):
        raise n.unsupported("an attention mask in a training step's fused attention (use is_causal)")
    do, q, k, v, o, lse = (n.tensor(a) for a in ("grad_out", "query", "key", "value", "out", "logsumexp"))
    dtype = _one_type(n, do, q, k, v, o)
    acc = acc_dtype(dtype)  # a half type's products accumulate in f32, as the fused kernels do
    causal = bool(n.get("is_causal", False))
    *batch, seq_q, e = vtype(q).shape
    *kb_, seq_k, _ = vtype(k).shape
    ev = vtype(v).shape[-1]
    group = _group(n, list(batch), list(kb_))
    scale = n.args.get("scale")
    if scale is None and not isinstance(e, int):
        raise n.unsupported("the default scale with a symbolic head size")
    factor = lit(scale if scale is not None else 1.0 / math.sqrt(e), acc)  # type: ignore[arg-type]
    em = n.em
    kern = em.kernel([(do, "dO"), (q, "Q"), (k, "K"), (v, "V"), (o, "O"), (lse, "LSE")],
                     [("dQ", ttype(vtype(q).shape, dtype)), ("dK", ttype(vtype(k).shape, dtype)),
                      ("dV", ttype(vtype(v).shape, dtype))])
    em.mark_precision(kern, "matmul", dtype)
    scores = (*batch, seq_q, seq_k)
    for name in ("S", "P", "dS", "dP"):
        kern.local(name, ttype(scores, acc))
    kern.local("D", ttype((*batch, seq_q), acc))
    # Where the inputs are a half type the gradients accumulate in f32 locals, then round once.
    grads = {g: g if acc == dtype else f"{g}acc" for g in ("dQ", "dK", "dV")}
    if acc != dtype:
        for g, t in (("dQ", q), ("dK", k), ("dV", v)):
            kern.local(grads[g], ttype(vtype(t).shape, acc))

    def read(name: str, index: list[Expr]) -> Expr:
        return cast(access(name, index), dtype, acc)

    lse_t = vtype(lse).dtype
    def shared(bidx: list[Expr]) -> list[Expr]:
        """The key-value head that query head `bidx[-1]` reads (its group's)."""
        return [*bidx[:-1], Binary("floordiv", bidx[-1], IntLit(group))] if group > 1 else list(bidx)

    with loops(kern, batch, "b") as bidx, loops(kern, [seq_q], "i") as (i,):
        upper: Expr = Binary("+", i, IntLit(1)) if causal else dexpr(seq_k)
        row = [*bidx, i]
        with kern.loop("j", 0, upper) as j, loops(kern, [e], "d") as (d,):
            kern.reduce(access("S", [*row, j]), "+=", read("Q", [*row, d]) * read("K", [*shared(bidx), j, d]))
        with kern.loop("j", 0, upper) as j:
            logit = access("S", [*row, j]) * factor - cast(access("LSE", row), lse_t, acc)
            kern.assign(access("P", [*row, j]), fcall("exp", logit))
        with loops(kern, [ev], "d") as (d,):
            kern.reduce(access("D", row), "+=", read("dO", [*row, d]) * read("O", [*row, d]))
        with kern.loop("j", 0, upper) as j, loops(kern, [ev], "d") as (d,):
            kern.reduce(access("dP", [*row, j]), "+=", read("dO", [*row, d]) * read("V", [*shared(bidx), j, d]))
        with kern.loop("j", 0, upper) as j:
            grad = access("P", [*row, j]) * (access("dP", [*row, j]) - access("D", row)) * factor
            kern.assign(access("dS", [*row, j]), grad)
        with loops(kern, [e], "d") as (d,), kern.loop("j", 0, upper) as j:
            kern.reduce(access(grads["dQ"], [*row, d]), "+=",
                        access("dS", [*row, j]) * read("K", [*shared(bidx), j, d]))
    # dK and dV per key-value head: summed over the query heads of its group (r) in the kernel, as a fused
    # grouped-query backward does, rather than over a repeated copy.
    with loops(kern, kb_, "b") as kidx, loops(kern, [seq_k], "j") as (j,):
        first: Expr = j if causal else IntLit(0)
        for grad, length, name, other in (("dK", e, "dS", "Q"), ("dV", ev, "P", "dO")):
            with loops(kern, [length], "d") as (d,), kern.loop("r", 0, group) as r, \
                    kern.loop("i", first, dexpr(seq_q)) as i:
                head = [*kidx[:-1], Binary("+", Binary("*", kidx[-1], IntLit(group)), r)] if group > 1 \
                    else list(kidx)
                kern.reduce(access(grads[grad], [*kidx, j, d]), "+=",
                            access(name, [*head, i, j]) * read(other, [*head, i, d]))
    if acc != dtype:
        for g, t, idx in (("dQ", q, "i"), ("dK", k, "j"), ("dV", v, "j")):
            with loops(kern, list(vtype(t).shape), idx) as ix:
                kern.assign(access(g, list(ix)), cast(access(grads[g], list(ix)), acc, dtype))
    return list(kern.results)


def _group(n: TorchNode, q_batch: list[Any], k_batch: list[Any]) -> int:
    """Query heads per key-value head (1 unless the key has fewer heads than the query, same batch)."""
    if q_batch == k_batch:
        return 1
    if q_batch[:-1] != k_batch[:-1] or not all(isinstance(h, int) for h in (q_batch[-1], k_batch[-1])) \
            or q_batch[-1] % k_batch[-1]:
        raise n.unsupported("attention whose query and key batch dims differ (other than grouped heads)")
    return int(q_batch[-1] // k_batch[-1])


def _conv_weight_grad(n: TorchNode, gy: Value, x: Value, w_shape: list[int], stride: list[int],
                      padding: list[int], dilation: list[int], groups: int, dtype: DType) -> Value:
    """GW[oc, c, r] += X[n, g·cg + c, p·s + r·d − pad] · GY[n, oc, p], under the forward's padding guards."""
    xt = vtype(x)
    nsp = xt.rank - 2
    n_, _, *sizes = xt.shape
    cout, cg, *ks = w_shape
    kg = cout // groups
    pout = list(vtype(gy).shape[2:])
    kb = n.em.kernel([(gy, "GY"), (x, "X")], [("GW", ttype(w_shape, dtype))])
    n.em.mark_precision(kb, "conv", dtype)
    acc_t = acc_dtype(dtype)  # a half type's products accumulate in f32, then round once
    acc = "GW" if acc_t == dtype else "acc"
    if acc != "GW":
        kb.local(acc, ttype(w_shape, acc_t))
    with maybe_loops(kb, [groups], ["g"]) as (g,), maybe_loops(kb, [kg], ["k"]) as (k,), \
            maybe_loops(kb, [cg], ["c"]) as (c,), maybe_loops(kb, ks, [f"r{i}" for i in range(nsp)]) as rs, \
            maybe_loops(kb, [n_], ["n"]) as (b,), maybe_loops(kb, pout, [f"p{i}" for i in range(nsp)]) as ps:
        oc = _chan(g, kg, k, groups)
        pos = [_affine((s, p), (d, r), -pad) for s, p, d, r, pad in zip(stride, ps, dilation, rs, padding, strict=True)]
        conds: list[Expr | None] = []
        for q, pad, size, p_out, kk, s, d in zip(pos, padding, sizes, pout, ks, stride, dilation, strict=True):
            if pad > 0:
                conds.append(Binary(">=", q, IntLit(0)))
            static = all(isinstance(v, int) for v in (size, p_out, kk))
            if not static or (p_out - 1) * s + (kk - 1) * d - pad > size - 1:  # type: ignore[operator]
                conds.append(Binary("<", q, dexpr(size)))
        with guard(kb, conj(*conds)):
            xv = cast(access("X", [b, _chan(g, cg, c, groups), *pos]), vtype(x).dtype, acc_t)
            kb.reduce(access(acc, [oc, c, *rs]), "+=", xv * cast(access("GY", [b, oc, *ps]), dtype, acc_t))
    if acc != "GW":
        with loops(kb, w_shape, "w") as widx:
            kb.assign(access("GW", widx), cast(access(acc, widx), acc_t, dtype))
    return kb.results[0]


def _bias_grad(n: TorchNode, gy: Value, dtype: DType) -> Value:
    shape = vtype(gy).shape
    kb = n.em.kernel([(gy, "GY")], [("GB", ttype([shape[1]], dtype))])
    acc_t = acc_dtype(dtype)
    acc = "GB" if acc_t == dtype else "acc"
    if acc != "GB":
        kb.local(acc, ttype([shape[1]], acc_t))
    with loops(kb, [shape[1]], "c") as (c,), loops(kb, [shape[0], *shape[2:]], "r") as rest:
        kb.reduce(access(acc, [c]), "+=", cast(access("GY", [rest[0], c, *rest[1:]]), dtype, acc_t))
    if acc != "GB":
        with loops(kb, [shape[1]], "c") as (c,):
            kb.assign(access("GB", [c]), cast(access(acc, [c]), acc_t, dtype))
    return kb.results[0]


@torch_op("convolution_backward")
def lower_convolution_backward(n: TorchNode) -> list[Value | None]:
    gy, x, w = n.tensor("grad_output"), n.tensor("input"), n.tensor("weight")
    if n.get("transposed", False):
        raise n.unsupported("the backward of a transposed convolution")
    dtype = vtype(gy).dtype
    wt = vtype(w)
    if not all(isinstance(d, int) for d in wt.shape):
        raise LoweringError("convolution weights need static sizes")
    nsp = wt.rank - 2
    stride, dilation = tuple_n(n.get("stride", 1), nsp), tuple_n(n.get("dilation", 1), nsp)
    padding = tuple_n(n.get("padding", 0), nsp)
    groups = int(n.get("groups", 1))
    mask = list(n.get("output_mask", [True, True, True]))
    out: list[Value | None] = [None, None, None]
    if mask[0]:
        out[0] = conv_transposed(n.em, gy, w, None, stride, padding, dilation, groups, vtype(x).shape, dtype)
    if mask[1]:
        out[1] = _conv_weight_grad(n, gy, x, [int(d) for d in wt.shape], stride, padding, dilation, groups, dtype)
    if mask[2]:
        out[2] = _bias_grad(n, gy, dtype)
    return out
