"""Selection as loop nests: `topk` for a small k (top-k routing in mixture-of-experts models), and the
cumulative `cummax` / `cummin` with their indices. One kernel each.

`topk` runs k selection passes over each line: pass j takes the extreme of the elements not yet chosen and
the least index reaching it. That is k·n comparisons per line (plus the checks against the j indices
already chosen), more than a selection network needs (about n + k·⌈log₂ n⌉), so its vector FLOPs are an
over-estimate for k > 1. The lowering is limited to k ≤ MAX_SELECTION_K, where the excess is a few vector
operations per element, next to the matmuls a router feeds; docs/counts.md states it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from solar.ir.dtypes import DType
from solar.ir.expr import Binary, Expr, IntLit
from solar.ir.ops import Value

from .core import (
    Emitter,
    _merge,
    access,
    cast,
    lit,
    loops,
    norm_dim,
    select,
    ttype,
    vtype,
)
from .registry import TorchNode, jax_prim, torch_op

if TYPE_CHECKING:
    from ..jax_export import JaxNode

MAX_SELECTION_K = 8


def topk(em: Emitter, x: Value, k: int, dim: int, largest: bool, index_dtype: DType = DType.I64
         ) -> list[Value]:
    """Values and indices of the k largest (smallest) elements along `dim`, in descending (ascending)
    order; among equal elements the lower index first."""
    t = vtype(x)
    rank = t.rank
    dim = norm_dim(dim, rank)
    n = t.shape[dim]
    if not isinstance(n, int):
        raise ValueError(f"top-k along a symbolic dimension ({n})")  # naming it lets export fix it
    kept = [d for d in range(rank) if d != dim]
    out_shape = [*t.shape[:dim], k, *t.shape[dim + 1:]]
    kb = em.kernel([(x, "X")], [("V", ttype(out_shape, t.dtype)), ("I", ttype(out_shape, index_dtype))])
    kshape = [t.shape[d] for d in kept]
    for j in range(k):
        kb.local(f"e{j}", ttype(kshape, t.dtype))
    worst = lit(float("-inf") if largest else float("inf"), t.dtype) if t.dtype.is_float else \
        lit(-(1 << 62) if largest else 1 << 62, t.dtype)
    with loops(kb, kshape, "i") as kidx:
        for j in range(k):
            oidx = _merge(rank, kept, kidx, [dim], [IntLit(j)])

            def chosen(r: Expr, j: int = j, kidx: list[Expr] = kidx) -> Expr | None:
                """r is one of the indices already chosen (passes before j)."""
                cond: Expr | None = None
                for jj in range(j):
                    prev = access("I", _merge(rank, kept, kidx, [dim], [IntLit(jj)]))
                    eq = Binary("==", prev, cast(r, DType.I64, index_dtype))
                    cond = eq if cond is None else Binary("or", cond, eq)
                return cond

            with loops(kb, [n], f"r{j}_") as (r,):
                full = _merge(rank, kept, kidx, [dim], [r])
                value: Expr = access("X", full)
                taken = chosen(r)
                if taken is not None:
                    value = select(taken, worst, value)
                kb.reduce(access(f"e{j}", kidx), "max=" if largest else "min=", value)
            with loops(kb, [n], f"q{j}_") as (r,):
                full = _merge(rank, kept, kidx, [dim], [r])
                hit: Expr = Binary("==", access("X", full), access(f"e{j}", kidx))
                taken = chosen(r)
                if taken is not None:
                    hit = Binary("and", hit, _negate(taken))
                kb.reduce(access("I", oidx), "min=", select(hit, cast(r, DType.I64, index_dtype), lit(n, index_dtype)))
            kb.assign(access("V", oidx), access(f"e{j}", kidx))
    return list(kb.results)


def _negate(cond: Expr) -> Expr:
    """not (a == b or c == d ...) as (a != b and c != d ...)."""
    if isinstance(cond, Binary) and cond.op == "or":
        return Binary("and", _negate(cond.lhs), _negate(cond.rhs))
    assert isinstance(cond, Binary) and cond.op == "=="
    return Binary("!=", cond.lhs, cond.rhs)


@torch_op("topk")
def lower_topk(n: TorchNode) -> list[Value]:
    k = n["k"]
    if not isinstance(k, int) or k > MAX_SELECTION_K:
        raise n.unsupported(f"topk with k = {k} (selection passes are lowered for k ≤ {MAX_SELECTION_K})")
    try:
        return topk(n.em, n.tensor("self"), k, n.get("dim", -1), bool(n.get("largest", True)))
    except ValueError as err:
        raise n.unsupported(str(err)) from None


@jax_prim("top_k")
def lower_jax_top_k(n: JaxNode) -> list[Value]:
    k = int(n.params["k"])
    if k > MAX_SELECTION_K:
        raise n.unsupported(f"top_k with k = {k} (selection passes are lowered for k ≤ {MAX_SELECTION_K})")
    x = n.tensor(0)
    dim = int(n.params.get("axis", -1)) if "axis" in n.params else -1
    try:
        return topk(n.em, x, k, dim, True, n.outs[1].dtype)
    except ValueError as err:
        raise n.unsupported(str(err)) from None


@torch_op("cummax", "cummin")
def lower_cummax(n: TorchNode) -> list[Value]:
    """Running extreme and the index where it was last reached (torch's tie rule: a later equal element
    takes over): one comparison and one running max per element."""
    x = n.tensor("self")
    t = vtype(x)
    rank = t.rank
    dim = norm_dim(n["dim"], rank)
    kept = [d for d in range(rank) if d != dim]
    largest = n.op == "aten::cummax"
    kb = n.em.kernel([(x, "X")], [("Y", ttype(t.shape, t.dtype)), ("I", ttype(t.shape, DType.I64))])
    kshape = [t.shape[d] for d in kept]
    kb.local("acc", ttype(kshape, t.dtype))
    kb.local("at", ttype(kshape, DType.I64))
    with loops(kb, kshape, "i") as kidx, loops(kb, [t.shape[dim]], "r") as (r,):
        full = _merge(rank, kept, kidx, [dim], [r])
        better = Binary(">=" if largest else "<=", access("X", full), access("acc", kidx))
        kb.assign(access("at", kidx), select(better, r, access("at", kidx)))
        kb.reduce(access("acc", kidx), "max=" if largest else "min=", access("X", full))
        kb.assign(access("Y", full), access("acc", kidx))
        kb.assign(access("I", full), access("at", kidx))
    return list(kb.results)
