"""FLOPs of lifted einsums against PyTorch's `FlopCounterMode`, and MACs against closed forms.

Each case writes one operation twice, as SIR (generated here) and as PyTorch (run on the meta device, so only
shapes matter). The SIR is parsed, verified and run through `--lift-einsum` with the pass registry and pass
manager; the counts are read from the einsums' `counts` attributes.

Conventions (see docs/counts.md): FlopCounterMode counts 2 FLOPs per multiply-accumulate of every matmul and
convolution, over the full kernel window, padding taps included; it ignores everything else (bias adds,
softmax). Our tensor FLOPs are 2·MACs of the contractions and our MACs count only the taps that land inside
the input: where the IR guards padding with `affine.if`, padding taps are no iteration points. So:
- matmul, bmm, SDPA and unpadded convolutions: our tensor FLOPs equal FlopCounterMode's exactly;
- addmm: tensor FLOPs equal; the bias add is M·N vector FLOPs that FlopCounterMode does not count;
- padded convolutions, written with guards: MACs equal the closed form that excludes padding taps
  (fewer than FlopCounterMode's / 2); written over an explicitly zero-padded input (F.pad, then no padding),
  the same convolution matches FlopCounterMode exactly.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

import pytest

torch = pytest.importorskip("torch")
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from solar.ir.diagnostics import DiagnosticEngine  # noqa: E402
from solar.ir.ops import EinsumOp, KernelOp, ModuleOp  # noqa: E402
from solar.ir.parser import parse_module  # noqa: E402
from solar.ir.pass_manager import PassContext, PassManager  # noqa: E402
from solar.ir.verifier import verify  # noqa: E402
from solar.passes import registry  # noqa: E402

SHAPES_PER_OP = 24


# ---- running the two sides -------------------------------------------------------------------------------


@dataclass
class Totals:
    macs: int = 0
    tensor: int = 0
    vector: int = 0


def lift(text: str) -> ModuleOp:
    engine = DiagnosticEngine()
    module = parse_module(text, "<generated>", engine)
    assert not engine.has_errors and verify(module, engine), engine.format_all() + "\n" + text
    ctx = PassContext(engine, report=lambda _: None)
    module = PassManager(registry.parse_pipeline("lift-einsum")).run(module, ctx)
    assert not engine.has_errors, engine.format_all()
    return module


def einsum_totals(text: str) -> Totals:
    """Sum of the counts of every einsum after --lift-einsum; every kernel must have lifted."""
    module = lift(text)
    totals = Totals()
    for func in module.funcs:
        for op in func.walk():
            assert not isinstance(op, KernelOp), f"kernel @{op.symbol} did not lift: {op.attrs.get('not_lifted')}"
            if isinstance(op, EinsumOp):
                counts: dict[str, Any] = op.attrs["counts"]  # type: ignore[assignment]
                totals.macs += counts["macs"]
                totals.tensor += counts["flops"]["tensor"]
                totals.vector += counts["flops"]["vector"]
    return totals


def torch_flops(fn: Any, *shapes: tuple[int, ...]) -> int:
    args = [torch.empty(s, device="meta") for s in shapes]
    with FlopCounterMode(display=False) as mode:
        fn(*args)
    return int(mode.get_total_flops())


def shapes(seed: int, draw: Any) -> list[Any]:
    rng = random.Random(seed)
    return [draw(rng) for _ in range(SHAPES_PER_OP)]


def loops(nest: list[tuple[str, int]], body: str) -> str:
    text = body
    for var, extent in reversed(nest):
        text = f"affine.for %{var} = 0 to {extent} {{\n{text}\n}}"
    return text


# ---- mm, bmm, addmm --------------------------------------------------------------------------------------

DIMS = (1, 2, 3, 7, 16, 33, 64, 100, 128, 257, 512, 1024, 4096)


def mm_ir(m: int, n: int, k: int) -> str:
    body = loops([("i", m), ("j", n), ("k", k)], "C[%i, %j] += A[%i, %k] * B[%k, %j]")
    return f"""solar.func @mm(%a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %c = solar.kernel @mm(%a as A, %b as B) -> (C: tensor<{m}x{n}xf32>) {{ {body} }}
  solar.return %c
}}"""


MM = shapes(1, lambda r: tuple(r.choice(DIMS) for _ in range(3)))


@pytest.mark.parametrize("m, n, k", MM)
def test_mm(m: int, n: int, k: int) -> None:
    ours = einsum_totals(mm_ir(m, n, k))
    assert ours.macs == m * n * k
    assert ours.tensor == torch_flops(torch.mm, (m, k), (k, n))
    assert ours.vector == 0


def bmm_ir(b: int, m: int, n: int, k: int) -> str:
    body = loops([("b", b), ("i", m), ("j", n), ("k", k)], "C[%b, %i, %j] += A[%b, %i, %k] * B[%b, %k, %j]")
    a, w, c = f"tensor<{b}x{m}x{k}xbf16>", f"tensor<{b}x{k}x{n}xbf16>", f"tensor<{b}x{m}x{n}xbf16>"
    return f"""solar.func @bmm(%a: {a}, %w: {w}) -> {c} {{
  %c = solar.kernel @bmm(%a as A, %w as B) -> (C: {c}) {{ {body} }}
  solar.return %c
}}"""


BMM = shapes(2, lambda r: (r.choice((1, 2, 3, 8, 12, 32)), *(r.choice(DIMS[:-1]) for _ in range(3))))


@pytest.mark.parametrize("b, m, n, k", BMM)
def test_bmm(b: int, m: int, n: int, k: int) -> None:
    ours = einsum_totals(bmm_ir(b, m, n, k))
    assert ours.macs == b * m * n * k
    assert ours.tensor == torch_flops(torch.bmm, (b, m, k), (b, k, n))


def addmm_ir(m: int, n: int, k: int) -> str:
    reduction = loops([("k", k)], "Y[%i, %j] += A[%i, %k] * B[%k, %j]")
    body = loops([("i", m), ("j", n)], "Y[%i, %j] = Bias[%j]\n" + reduction)
    args = f"%bias: tensor<{n}xf32>, %a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>"
    return f"""solar.func @addmm({args}) -> tensor<{m}x{n}xf32> {{
  %y = solar.kernel @addmm(%bias as Bias, %a as A, %b as B) -> (Y: tensor<{m}x{n}xf32>) {{ {body} }}
  solar.return %y
}}"""


ADDMM = shapes(3, lambda r: tuple(r.choice(DIMS) for _ in range(3)))


@pytest.mark.parametrize("m, n, k", ADDMM)
def test_addmm(m: int, n: int, k: int) -> None:
    ours = einsum_totals(addmm_ir(m, n, k))
    assert ours.macs == m * n * k
    assert ours.tensor == torch_flops(torch.addmm, (n,), (m, k), (k, n))
    assert ours.vector == m * n  # the bias add (`P + R` after the contraction); FlopCounterMode ignores it


# ---- convolutions ----------------------------------------------------------------------------------------

SPATIAL = "pqu"  # output positions
TAPS = "rsv"  # kernel taps


@dataclass(frozen=True)
class Conv:
    n: int
    c: int  # input channels
    k: int  # output channels
    size: tuple[int, ...]  # input spatial size, one per dim
    kernel: tuple[int, ...]
    stride: int
    pad: int
    dilation: int
    groups: int

    @property
    def out(self) -> tuple[int, ...]:
        return tuple((n + 2 * self.pad - self.dilation * (r - 1) - 1) // self.stride + 1
                     for n, r in zip(self.size, self.kernel, strict=True))

    def full_macs(self) -> int:
        """MACs over the full window (FlopCounterMode's convention: padding taps count)."""
        return self.n * self.k * (self.c // self.groups) * math.prod(self.out) * math.prod(self.kernel)

    def valid_macs(self) -> int:
        """MACs of the taps that land inside the input: per dim, the (output, tap) pairs in bounds."""
        per_dim = [sum(1 for o in range(out) for r in range(kern)
                       if 0 <= o * self.stride + r * self.dilation - self.pad < size)
                   for out, kern, size in zip(self.out, self.kernel, self.size, strict=True)]
        return self.n * self.k * (self.c // self.groups) * math.prod(per_dim)

    def ir(self, prepadded: bool) -> str:
        """The convolution as one kernel. Padding is either guarded (`affine.if`) or already in the input
        (a zero-padded tensor, as F.pad would make it)."""
        d = len(self.size)
        cg, kg = self.c // self.groups, self.k // self.groups
        size = [s + 2 * self.pad for s in self.size] if prepadded else list(self.size)
        shift = 0 if prepadded else self.pad
        pos = [f"{self.stride} * %{SPATIAL[i]} + {self.dilation} * %{TAPS[i]} - {shift}" for i in range(d)]
        outs, taps = ", ".join("%" + SPATIAL[i] for i in range(d)), ", ".join("%" + TAPS[i] for i in range(d))
        body = (f"Y[%n, {kg} * %g + %k, {outs}] += "
                f"X[%n, {cg} * %g + %c, {', '.join(pos)}] * W[{kg} * %g + %k, %c, {taps}]")
        if self.pad and not prepadded:
            body = "affine.if " + " and ".join(f"{p} >= 0 and {p} < {s}" for p, s in zip(pos, size, strict=True)) + \
                f" {{ {body} }}"
        nest = [("n", self.n), ("g", self.groups), ("k", kg), *zip(SPATIAL[:d], self.out, strict=True), ("c", cg),
                *zip(TAPS[:d], self.kernel, strict=True)]
        x = "x".join(map(str, [self.n, self.c, *size]))
        w = "x".join(map(str, [self.k, cg, *self.kernel]))
        y = "x".join(map(str, [self.n, self.k, *self.out]))
        return f"""solar.func @conv(%x: tensor<{x}xf32>, %w: tensor<{w}xf32>) -> tensor<{y}xf32> {{
  %y = solar.kernel @conv(%x as X, %w as W) -> (Y: tensor<{y}xf32>) {{ {loops(nest, body)} }}
  solar.return %y
}}"""

    def torch_flops(self) -> int:
        fn = (torch.nn.functional.conv1d, torch.nn.functional.conv2d, torch.nn.functional.conv3d)[len(self.size) - 1]
        return torch_flops(lambda x, w: fn(x, w, stride=self.stride, padding=self.pad, dilation=self.dilation,
                                           groups=self.groups),
                           (self.n, self.c, *self.size), (self.k, self.c // self.groups, *self.kernel))


def draw_conv(rng: random.Random, dims: int) -> Conv:
    while True:
        groups = rng.choice((1, 1, 2, 4))
        depthwise = rng.random() < 0.2
        c = rng.choice((1, 2, 3, 4, 8, 16)) * groups
        k = c if depthwise else rng.choice((1, 2, 4, 8)) * groups
        groups = c if depthwise else groups
        kernel = tuple(rng.choice((1, 2, 3, 5)) for _ in range(dims))
        size = tuple(rng.choice((4, 5, 7, 8, 12, 16) if dims == 3 else (5, 7, 8, 13, 16, 28, 32)) for _ in range(dims))
        conv = Conv(rng.choice((1, 2)), c, k, size, kernel, rng.choice((1, 1, 2, 3)), rng.choice((0, 0, 1, 2)),
                    rng.choice((1, 1, 2)), groups)
        if all(o >= 1 for o in conv.out):
            return conv


CONVS = [draw_conv(random.Random(100 + i), dims) for dims in (1, 2, 3) for i in range(SHAPES_PER_OP)]


@pytest.mark.parametrize("conv", CONVS, ids=[f"{len(c.size)}d-{i}" for i, c in enumerate(CONVS)])
def test_conv(conv: Conv) -> None:
    torch_count = conv.torch_flops()
    assert torch_count == 2 * conv.full_macs()  # FlopCounterMode: the full window, padding included
    guarded = einsum_totals(conv.ir(prepadded=False))
    assert guarded.macs == conv.valid_macs()  # padding taps are not iteration points
    assert guarded.tensor == 2 * conv.valid_macs()
    if conv.pad == 0:
        assert guarded.tensor == torch_count
    prepadded = einsum_totals(conv.ir(prepadded=True))
    assert prepadded.macs == conv.full_macs()
    assert prepadded.tensor == torch_count


def test_conv_cases_cover_the_features() -> None:
    """The drawn shapes include every feature the comparison is about, in each dimensionality."""
    for dims in (1, 2, 3):
        cases = [c for c in CONVS if len(c.size) == dims]
        assert len(cases) >= 20
        assert any(c.stride > 1 for c in cases) and any(c.pad > 0 for c in cases)
        assert any(c.dilation > 1 for c in cases) and any(1 < c.groups < c.c for c in cases)
        assert any(c.valid_macs() < c.full_macs() for c in cases)
    assert any(c.groups == c.c > 1 for c in CONVS)  # depthwise


# ---- scaled dot-product attention (not causal) -----------------------------------------------------------


def sdpa_ir(b: int, h: int, lq: int, lk: int, e: int, ev: int) -> str:
    scale = 1.0 / math.sqrt(e)
    scores = loops([("b", b), ("h", h), ("i", lq), ("j", lk), ("d", e)],
                   "S[%b, %h, %i, %j] += Q[%b, %h, %i, %d] * K[%b, %h, %j, %d]")
    x = f"S[%b, %h, %i, %j] * {scale!r}"
    softmax = loops([("b", b), ("h", h), ("i", lq)], "\n".join([
        loops([("j", lk)], f"mx[%b, %h, %i] max= {x}"),
        loops([("j", lk)], f"sum[%b, %h, %i] += exp({x} - mx[%b, %h, %i])"),
        loops([("j", lk)], f"P[%b, %h, %i, %j] = exp({x} - mx[%b, %h, %i]) / sum[%b, %h, %i]"),
    ]))
    pv = loops([("b", b), ("h", h), ("i", lq), ("f", ev), ("j", lk)],
               "O[%b, %h, %i, %f] += P[%b, %h, %i, %j] * V[%b, %h, %j, %f]")
    s, row = f"tensor<{b}x{h}x{lq}x{lk}xf32>", f"tensor<{b}x{h}x{lq}xf32>"
    args = f"%q: tensor<{b}x{h}x{lq}x{e}xf32>, %k: tensor<{b}x{h}x{lk}x{e}xf32>, %v: tensor<{b}x{h}x{lk}x{ev}xf32>"
    return f"""solar.func @sdpa({args}) -> tensor<{b}x{h}x{lq}x{ev}xf32> {{
  %s = solar.kernel @scores(%q as Q, %k as K) -> (S: {s}) {{ {scores} }}
  %p = solar.kernel @softmax(%s as S) -> (P: {s}) {{
    local mx: {row}
    local sum: {row}
    {softmax}
  }}
  %o = solar.kernel @pv(%p as P, %v as V) -> (O: tensor<{b}x{h}x{lq}x{ev}xf32>) {{ {pv} }}
  solar.return %o
}}"""


SDPA = shapes(4, lambda r: (r.choice((1, 2, 4)), r.choice((1, 2, 8, 12)), r.choice((1, 7, 64, 128, 512)),
                            r.choice((1, 9, 64, 256, 1024)), r.choice((8, 16, 64, 128)), r.choice((8, 32, 64))))


@pytest.mark.parametrize("b, h, lq, lk, e, ev", SDPA)
def test_sdpa(b: int, h: int, lq: int, lk: int, e: int, ev: int) -> None:
    ours = einsum_totals(sdpa_ir(b, h, lq, lk, e, ev))
    assert ours.macs == b * h * lq * lk * (e + ev)  # the two batched matmuls
    assert ours.tensor == torch_flops(torch.nn.functional.scaled_dot_product_attention,
                                      (b, h, lq, e), (b, h, lk, e), (b, h, lk, ev))
    # The softmax is vector work FlopCounterMode does not count: per score, max: mul + max; sum: mul, sub,
    # exp, add; normalize: mul, sub, exp, div.
    assert ours.vector == 10 * b * h * lq * lk


def test_at_least_20_distinct_shapes_per_op() -> None:
    drawn = {"mm": MM, "bmm": BMM, "addmm": ADDMM, "sdpa": SDPA,
             **{f"conv{d}d": [c for c in CONVS if len(c.size) == d] for d in (1, 2, 3)}}
    for op, cases in drawn.items():
        assert len(set(cases)) >= 20, op
