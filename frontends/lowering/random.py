"""Random numbers drawn in `forward`: `rand`, `randn` (and their `_like` forms) and dropout in training mode
(`bernoulli` reaches us decomposed into `rand` and a comparison).

A framework runs these as one generator kernel that writes its output (a counter-based generator such as
Philox: a few integer operations per value, no reads). Here too: one kernel per op, with a counter-based
hash of the element's flat index standing in for the generator, so the IR writes what the op writes and
does about the work a generator does (docs/counts.md). The values cannot equal the framework's, so a
module with random ops is validated by shape, dtype and statistics (frontends/validate.py), and says so
(`attributes {random = [...]}` and the header).
"""

from __future__ import annotations

import math

from solar.ir.builder import KernelBuilder
from solar.ir.dtypes import DType
from solar.ir.expr import Binary, Cast, Expr, IntLit
from solar.ir.ops import Value

from .core import Emitter, access, fcall, linear_index, lit, loops, select, ttype, vtype
from .registry import TorchNode, torch_op

RANDOM_OPS = frozenset({"aten::rand", "aten::randn", "aten::rand_like", "aten::randn_like"})
_PRIME = 2147483647  # 2^31 − 1: the MINSTD modulus
_BITS = 1 << 24  # uniform values on a grid of 2^-24: every one an exact f32


def _uniform(kb: KernelBuilder, idx: list[Expr], flat: Expr, stream: int, dtype: DType) -> Expr:
    """A value in (0, 1) from the flat index: an affine scramble, a squaring and a MINSTD step mod 2^31 − 1
    (i64 arithmetic, which wraps as SIR integers do), then 24 bits of it. The scrambled index is kept in an
    on-chip local so the squaring reads it instead of computing it twice."""
    name = f"h{stream}"
    kb.local(name, ttype([], DType.I64))
    h0 = Binary("mod", Binary("+", Binary("*", flat, IntLit(2654435761)), IntLit(12345 + 7919 * stream)),
                IntLit(_PRIME))
    kb.assign(access(name, []), h0)
    h = access(name, [])
    h2 = Binary("mod", Binary("+", Binary("*", h, h), IntLit(7 + stream)), IntLit(_PRIME))
    h3 = Binary("mod", Binary("*", h2, IntLit(48271)), IntLit(_PRIME))
    bits = Cast(dtype, Binary("mod", h3, IntLit(_BITS)))
    return Binary("/", Binary("+", bits, lit(0.5, dtype)), lit(float(_BITS), dtype))


def random_kernel(em: Emitter, shape: tuple, dtype: DType, normal: bool) -> Value:
    """One generator kernel writing `shape` values, uniform on (0, 1) or standard normal (Box–Muller)."""
    stream = em.random_streams = getattr(em, "random_streams", 0) + 2  # distinct values per op
    compute = DType.F32 if dtype != DType.F64 else DType.F64
    kb = em.kernel([], [("Y", ttype(shape, dtype))], "rand")
    with loops(kb, shape) as idx:
        flat = linear_index(idx, shape)
        u = _uniform(kb, idx, flat, stream, compute)
        if normal:
            radius = fcall("sqrt", Binary("*", lit(-2.0, compute), fcall("log", u)))
            v: Expr = Binary("*", radius, fcall("cos", Binary("*", lit(2 * math.pi, compute),
                                                              _uniform(kb, idx, flat, stream + 1, compute))))
        else:
            v = u
        kb.assign(access("Y", idx), v if compute == dtype else Cast(dtype, v))
    return kb.results[0]


@torch_op("rand", "randn", "rand_like", "randn_like")
def lower_random(n: TorchNode) -> Value:
    if not n.out.dtype.is_float:
        raise n.unsupported(f"random values of type {n.out.dtype.spelling}")
    return random_kernel(n.em, tuple(n.out.shape), n.out.dtype, normal="randn" in n.op)


def training_dropout(n: TorchNode, x: Value, p: float) -> list[Value]:
    """Dropout in training mode: keep each element with probability 1 − p, scaled by 1 / (1 − p); the keep
    mask is drawn by a generator kernel, as the framework's fused dropout does."""
    t = vtype(x)
    u = random_kernel(n.em, tuple(t.shape), DType.F32, normal=False)
    kb = n.em.kernel([(x, "X"), (u, "U")], [("Y", ttype(t.shape, t.dtype)), ("M", ttype(t.shape, DType.I1))])
    keep = 1.0 - p
    with loops(kb, t.shape) as idx:
        kept = Binary("<", access("U", idx), lit(keep, DType.F32))
        kb.assign(access("M", idx), kept)
        scaled = Binary("*", access("X", idx), lit(1.0 / keep if keep else 0.0, t.dtype))
        kb.assign(access("Y", idx), select(kept, scaled, lit(0.0, t.dtype)))
    return list(kb.results)
