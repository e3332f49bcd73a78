"""Tensor creation: splat constants (zeros, ones, full, ..._like), arange, eye. Random creation (randn in
`forward`) has no deterministic translation and stays unsupported."""

from __future__ import annotations

from solar.ir.dtypes import DType
from solar.ir.expr import Binary, Cast, Expr
from solar.ir.ops import Value

from .core import access, lit, loops, select, ttype
from .registry import TorchNode, torch_op


@torch_op("zeros", "zeros_like", "new_zeros", "empty", "empty_like", "new_empty", "empty_strided",
          "new_empty_strided", "empty_permuted")
def lower_zeros(n: TorchNode) -> Value:
    # Uninitialized memory (empty) is given zeros: a program that reads it has no defined result anyway.
    return n.em.constant(0, n.out.shape, n.out.dtype)


@torch_op("ones", "ones_like", "new_ones")
def lower_ones(n: TorchNode) -> Value:
    return n.em.constant(1, n.out.shape, n.out.dtype)


@torch_op("full", "full_like", "new_full", "fill")
def lower_full(n: TorchNode) -> Value:
    value = n.args.get("fill_value", n.args.get("value"))
    if isinstance(value, Value):
        raise n.unsupported("filling with a tensor value")
    return n.em.constant(value, n.out.shape, n.out.dtype)


@torch_op("scalar_tensor")
def lower_scalar_tensor(n: TorchNode) -> Value:
    s = n["s"]
    if isinstance(s, Expr):
        # A size made a tensor (`torch.tensor(cache.shape[2])`, a cache's length): one element holding the
        # size expression, so that positions computed from it keep their value (index_values).
        kb = n.em.kernel([], [("Y", ttype((), n.out.dtype))])
        kb.assign(access("Y", []), _typed(s, n.out.dtype))
        return kb.results[0]
    return n.em.constant(s, (), n.out.dtype)


def _typed(e: Expr, dt: DType) -> Expr:
    """A size expression (an i64 index) as a value of `dt`."""
    return e if dt == DType.I64 else Cast(dt, e)


@torch_op("arange")
def lower_arange(n: TorchNode) -> Value:
    dt = n.out.dtype
    start = n.args.get("start") or 0
    step = n.args.get("step") or 1
    if isinstance(step, Expr):
        raise n.unsupported("arange with a symbolic step")
    kb = n.em.kernel([], [("Y", ttype(n.out.shape, dt))])
    with loops(kb, n.out.shape) as (i,):
        # The index is an i64: any other element type computes from its cast (i32 positions, ALiBi slopes).
        v: Expr = _typed(i, dt)
        v = v * lit(step, dt) if step != 1 else v
        if isinstance(start, Expr):  # a symbolic start: positions after a cache of that length
            v = Binary("+", v, _typed(start, dt))
        elif start != 0:
            v = v + lit(start, dt)
        kb.assign(access("Y", [i]), v)
    return kb.results[0]


@torch_op("eye")
def lower_eye(n: TorchNode) -> Value:
    dt = n.out.dtype
    kb = n.em.kernel([], [("Y", ttype(n.out.shape, dt))])
    with loops(kb, n.out.shape) as (i, j):
        kb.assign(access("Y", [i, j]), select(Binary("==", i, j), lit(1, dt), lit(0, dt)))
    return kb.results[0]
