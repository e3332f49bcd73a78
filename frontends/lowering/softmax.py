"""softmax and log_softmax: one kernel with the three passes of a stable softmax (max, sum of exp, scale)."""

from __future__ import annotations

from solar.ir.dtypes import DType
from solar.ir.expr import Unary
from solar.ir.ops import Value

from .core import Emitter, _merge, acc_dtype, access, cast, fcall, loops, norm_dim, ttype, vtype
from .registry import TorchNode, torch_op


def softmax(em: Emitter, x: Value, dim: int, out_dtype: DType, log: bool = False, negate: bool = False) -> Value:
    t = vtype(x)
    rank = t.rank
    dim = norm_dim(dim, rank)
    if rank == 0:  # torch takes dim 0 or -1 of a scalar: the softmax of its one-element view
        return em.reshape(softmax(em, em.reshape(x, (1,)), 0, out_dtype, log, negate), ())
    kept = [k for k in range(rank) if k != dim]
    acc_t = acc_dtype(out_dtype)
    kb = em.kernel([(x, "X")], [("Y", ttype(t.shape, out_dtype))])
    kshape = [t.shape[k] for k in kept]
    kb.local("mx", ttype(kshape, acc_t))
    kb.local("sum", ttype(kshape, acc_t))

    def read(kidx: list, r: list) -> object:
        v = cast(access("X", _merge(rank, kept, kidx, [dim], r)), t.dtype, acc_t)
        return Unary("-", v) if negate else v

    with loops(kb, kshape, "i") as kidx:
        with loops(kb, [t.shape[dim]], "r") as r:
            kb.reduce(access("mx", kidx), "max=", read(kidx, r))
        with loops(kb, [t.shape[dim]], "r") as r:
            kb.reduce(access("sum", kidx), "+=", fcall("exp", read(kidx, r) - access("mx", kidx)))
        with loops(kb, [t.shape[dim]], "r") as r:
            shifted = read(kidx, r) - access("mx", kidx)
            y = shifted - fcall("log", access("sum", kidx)) if log else fcall("exp", shifted) / access("sum", kidx)
            kb.assign(access("Y", _merge(rank, kept, kidx, [dim], r)), cast(y, acc_t, out_dtype))
    return kb.results[0]


@torch_op("softmax", "_softmax", "special_softmax")
def lower_softmax(n: TorchNode) -> Value:
    return softmax(n.em, n.tensor("self"), n["dim"], n.out.dtype)


@torch_op("log_softmax", "_log_softmax", "special_log_softmax")
def lower_log_softmax(n: TorchNode) -> Value:
    return softmax(n.em, n.tensor("self"), n["dim"], n.out.dtype, log=True)
