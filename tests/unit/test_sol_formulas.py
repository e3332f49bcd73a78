"""SOL numbers checked against formulas written in this file (docs/sol.md), never against the tool's output.

FLOPs and bytes are derived by hand from the programs; peaks and bandwidths come from ../shared/TARGETS.md
(`test_sol_support.FIGURES`). Per unit: t = max(FLOPs on tensor cores / Π_tc, FLOPs on vector units / Π_vec,
bytes / β), with f32 contractions on the FP32 vector units unless --allow-tf32. Unfused = Σ over kernels,
fused = Σ over fusion groups, whole graph = one roofline on the totals with the compulsory traffic.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from test_sol_support import FIGURES, Figures, Roof, SolRun, close, roofline, run_sol

from solar.backends.report import TargetReport
from solar.ir.dtypes import DType

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TARGETS = ["h100-sxm", "b200", "a100", "jetson-thor"]
TF32_TARGETS = [t for t in TARGETS if FIGURES[t].tf32_tensor is not None]  # Thor's TF32 peak is unknown


@dataclass(frozen=True)
class Unit:
    """Hand counts of one unit (or group): FLOPs by where they run, and DRAM bytes."""

    name: str
    f32_contraction: int = 0
    bf16_contraction: int = 0
    vector: int = 0
    nbytes: int = 0

    @property
    def flops(self) -> int:
        return self.f32_contraction + self.bf16_contraction + self.vector

    def roof(self, fig: Figures, allow_tf32: bool) -> Roof:
        return roofline(fig, f32_contraction=self.f32_contraction, bf16_contraction=self.bf16_contraction,
                        vector=self.vector, nbytes=self.nbytes, allow_tf32=allow_tf32)


def merged(name: str, units: list[Unit], nbytes: int) -> Unit:
    """A fusion group: the members' FLOPs, and the bytes crossing its boundary (given by the test)."""
    return Unit(name, sum(u.f32_contraction for u in units), sum(u.bf16_contraction for u in units),
                sum(u.vector for u in units), nbytes)


def check_report(r: TargetReport, units: list[Unit], groups: list[list[Unit]], group_bytes: list[int],
                 compulsory: int, allow_tf32: bool) -> None:
    """Every number of one target's report against the hand counts: per unit, per group, the three modes,
    the fusion gain and the bound labels. `groups` lists the fusion groups (a unit in none is its own)."""
    fig = FIGURES[r.name]
    assert [w.name for w, _ in r.units] == [u.name for u in units]
    for (w, t), u in zip(r.units, units, strict=True):
        roof = u.roof(fig, allow_tf32)
        assert w.flops == u.flops, u.name
        assert w.total_bytes == u.nbytes, u.name
        assert close(t.seconds, roof.seconds), (u.name, t, roof)
        assert close(t.tensor_s, roof.tensor_s) and close(t.vector_s, roof.vector_s)
        assert close(t.memory_s, roof.memory_s)
        assert t.bound == roof.bound, u.name
    in_group = {u.name for g in groups for u in g}
    fused_works = [merged(f"group{k}", g, b) for k, (g, b) in enumerate(zip(groups, group_bytes, strict=True))]
    assert len(r.groups) == len(groups)
    for (w, t), g in zip(r.groups, fused_works, strict=True):
        roof = g.roof(fig, allow_tf32)
        assert w.flops == g.flops and w.total_bytes == g.nbytes, (w.name, w.flops, w.total_bytes)
        assert close(t.seconds, roof.seconds) and t.bound == roof.bound, (w.name, t, roof)
    fused_works += [u for u in units if u.name not in in_group]

    unfused = sum(u.roof(fig, allow_tf32).seconds for u in units)
    fused = sum(g.roof(fig, allow_tf32).seconds for g in fused_works)
    whole = merged("whole", units, compulsory).roof(fig, allow_tf32)
    assert close(r.modes["unfused"].seconds, unfused)
    assert close(r.modes["fused"].seconds, fused)
    assert close(r.modes["whole_graph"].seconds, whole.seconds)
    assert r.modes["whole_graph"].bound == whole.bound
    assert r.modes["unfused"].flops == r.modes["fused"].flops == r.modes["whole_graph"].flops == \
        sum(u.flops for u in units)
    assert r.modes["unfused"].bytes == sum(u.nbytes for u in units)
    assert r.modes["fused"].bytes == sum(g.nbytes for g in fused_works)
    assert r.modes["whole_graph"].bytes == compulsory
    assert close(r.fusion_gain, unfused / fused)
    # The mode's bound names the largest of its summed terms.
    total = Roof(0, 0, 0)
    for u in units:
        total = total + u.roof(fig, allow_tf32)
    assert r.modes["unfused"].bound == total.bound


# ---- matmul ---------------------------------------------------------------------------------------------


def matmul_text(m: int, n: int, k: int, dtype: str) -> str:
    return f"""solar.module @mm {{
  solar.func @mm(%a: tensor<{m}x{k}x{dtype}>, %b: tensor<{k}x{n}x{dtype}>) -> tensor<{m}x{n}x{dtype}> {{
    %c = solar.kernel @mm(%a as A, %b as B) -> (C: tensor<{m}x{n}x{dtype}>) {{
      affine.for %i = 0 to {m} {{
        affine.for %j = 0 to {n} {{
          affine.for %k = 0 to {k} {{
            C[%i, %j] += A[%i, %k] * B[%k, %j]
          }}
        }}
      }}
    }}
    solar.return %c
  }}
}}
"""


SHAPES = [(256, 384, 512), (1024, 1024, 1024), (8, 4096, 1024)]
PRECISIONS = [("f32", False), ("f32", True), ("bf16", False)]


@pytest.mark.parametrize("lift", [False, True], ids=["kernel", "lifted"])
@pytest.mark.parametrize(("dtype", "tf32"), PRECISIONS, ids=["f32", "f32-tf32", "bf16"])
@pytest.mark.parametrize("shape", SHAPES, ids=["x".join(map(str, s)) for s in SHAPES])
def test_matmul(shape: tuple[int, int, int], dtype: str, tf32: bool, lift: bool) -> None:
    m, n, k = shape
    itemsize = {"f32": 4, "bf16": 2}[dtype]
    flops = 2 * m * n * k  # m·n·k MACs
    nbytes = (m * k + k * n + m * n) * itemsize  # A and B read once, C written once
    unit = Unit("@mm", f32_contraction=flops if dtype == "f32" else 0,
                bf16_contraction=flops if dtype == "bf16" else 0, nbytes=nbytes)
    targets = TF32_TARGETS if tf32 else TARGETS
    run = run_sol(matmul_text(m, n, k, dtype), targets, lift=lift, allow_tf32=tf32)
    for r in run.reports:
        check_report(r, [unit], [], [], nbytes, tf32)
        assert close(r.fusion_gain, 1.0)


def test_matmul_bound_labels() -> None:
    """A few labels written out, so that a wrong peak choice cannot hide behind a shared formula."""
    labels = {}
    for shape in SHAPES:
        for dtype, tf32 in PRECISIONS:
            run = run_sol(matmul_text(*shape, dtype), TF32_TARGETS if tf32 else TARGETS, lift=False,
                          allow_tf32=tf32)
            for r in run.reports:
                labels[(shape, dtype, tf32, r.name)] = r.units[0][1].bound
    # 256x384x512 f32 on H100: 100.7 MFLOP / 66.9 TFLOP/s = 1.50 µs > 1.70 MB / 3.35 TB/s = 0.51 µs.
    assert labels[((256, 384, 512), "f32", False, "h100-sxm")] == "vector"
    # ... with TF32: 0.20 µs on tensor cores < 0.51 µs of memory.
    assert labels[((256, 384, 512), "f32", True, "h100-sxm")] == "memory"
    # 1024³ bf16 on H100: 2.15 GFLOP / 989.4 TFLOP/s = 2.17 µs > 6.29 MB / 3.35 TB/s = 1.88 µs.
    assert labels[((1024, 1024, 1024), "bf16", False, "h100-sxm")] == "tensor"
    # ... on Thor: 8.3 µs of tensor work < 23 µs of memory at 273 GB/s.
    assert labels[((1024, 1024, 1024), "bf16", False, "jetson-thor")] == "memory"
    # 8x4096x1024 (a skinny GEMM: 16 FLOP per 4-byte weight) is memory-bound on every target and precision;
    # on Thor in f32: 67 MFLOP / 8 TFLOP/s = 8.4 µs < 16.9 MB / 273 GB/s = 62 µs.
    assert {v for (shape, *_), v in labels.items() if shape == (8, 4096, 1024)} == {"memory"}


def test_tf32_on_a_target_without_a_tf32_figure_takes_the_bf16_tensor_peak() -> None:
    """Thor's TF32 peak is unknown: the FP32 vector peak could make the bound exceed the true time, so TF32
    work takes the BF16 tensor peak (no TF32 run is faster), and the report says why."""
    run = run_sol(matmul_text(64, 64, 64, "f32"), ["jetson-thor"], lift=False, allow_tf32=True)
    choice = run.reports[0].peaks.choice(DType.TF32, True)
    assert (choice.precision, choice.unit) == ("bf16", "tensor")
    assert choice.flop_per_s == FIGURES["jetson-thor"].bf16_tensor and "TF32 peak is unknown" in choice.reason
    unit = run.reports[0].units[0][1]
    assert close(unit.tensor_s, 2 * 64**3 / FIGURES["jetson-thor"].bf16_tensor)


# ---- MLP: linear + bias + ReLU + linear (examples/mlp.sir) ------------------------------------------------


def mlp_units(lift: bool) -> list[Unit]:
    b, d_in, d_hidden, d_out = 64, 512, 1024, 256
    f = 4  # f32
    # fc1: H = Bias; H += X·W1ᵀ (2·B·1024·512 FLOPs; the bias store is a copy). Lifted, the kernel becomes
    # three einsums (bias broadcast, matmul, add) whose add costs one FLOP per element of H.
    bias_add = b * d_hidden if lift else 0
    fc1 = Unit("@fc1", f32_contraction=2 * b * d_hidden * d_in, vector=bias_add,
               nbytes=(b * d_in + d_hidden * d_in + d_hidden + b * d_hidden) * f)
    relu = Unit("@relu", vector=b * d_hidden, nbytes=2 * b * d_hidden * f)  # one max per element
    fc2 = Unit("@fc2", f32_contraction=2 * b * d_out * d_hidden,
               nbytes=(b * d_hidden + d_out * d_hidden + b * d_out) * f)
    return [fc1, relu, fc2]


MLP_COMPULSORY = (64 * 512 + 1024 * 512 + 1024 + 256 * 1024 + 64 * 256) * 4  # x, w1, b1, w2 read; y written


@pytest.mark.parametrize("lift", [False, True], ids=["kernel", "lifted"])
@pytest.mark.parametrize("tf32", [False, True], ids=["f32", "tf32"])
@pytest.mark.parametrize("mode", ["greedy", "producer-consumer", "none"])
def test_mlp(mode: str, tf32: bool, lift: bool) -> None:
    units = mlp_units(lift)
    fc1, relu, _ = units
    if mode == "greedy":  # one group: only x, w1, b1, w2 and y cross its boundary
        groups, group_bytes = [units], [MLP_COMPULSORY]
    elif mode == "producer-consumer":  # fc1 + its ReLU epilogue; fc2 is a second reduction
        groups, group_bytes = [[fc1, relu]], [(64 * 512 + 1024 * 512 + 1024 + 64 * 1024) * 4]
    else:
        groups, group_bytes = [], []
    run = run_sol((EXAMPLES / "mlp.sir").read_text(), TF32_TARGETS if tf32 else TARGETS, lift=lift, mode=mode,
                  allow_tf32=tf32)
    for r in run.reports:
        check_report(r, units, groups, group_bytes, MLP_COMPULSORY, tf32)


def test_mlp_fusion_gain_on_thor() -> None:
    """Thor at 273 GB/s: fc1 is memory-bound alone (2.49 MB ≈ 9.1 µs > 67 MFLOP / 8 TFLOP/s ≈ 8.4 µs), so
    removing the 1.05 MB of h and a traffic makes fusion worth 1.28×."""
    r = run_sol((EXAMPLES / "mlp.sir").read_text(), ["jetson-thor"], lift=False).reports[0]
    fig = FIGURES["jetson-thor"]
    units = mlp_units(False)
    unfused = sum(u.roof(fig, False).seconds for u in units)
    fused = merged("g", units, MLP_COMPULSORY).roof(fig, False)
    assert [t.bound for _, t in r.units] == ["memory", "memory", "memory"]
    assert fused.bound == "vector" and r.modes["fused"].bound == "vector"
    assert close(r.fusion_gain, unfused / fused.seconds)
    assert 1.27 < r.fusion_gain < 1.29


# ---- causal attention (examples/causal_attention.sir): the triangle ---------------------------------------


def attention_units() -> tuple[list[Unit], int]:
    h, s, d, f = 4, 128, 64, 4
    tri = h * s * (s + 1) // 2  # score elements with j <= i: 4 · 8256
    full = h * s * s
    qkv = h * s * d * f  # one of q, k, v, o in bytes
    scores = Unit("@scores", f32_contraction=2 * tri * d, nbytes=2 * qkv + tri * f)  # S written: the triangle
    # softmax per triangle element: max= (S·0.125): 2; sum += exp(S·0.125 − mx): 4; P = exp(...)/sum: 4.
    # The kernel stores zeros into P's upper triangle (the whole P is written); lifted, those elements are
    # the einsum's implicit zeros, and the einsum is `zero_filled`: they are written too, as by the kernel.
    p_written = full * f
    softmax = Unit("@causal_softmax", vector=10 * tri, nbytes=tri * f + p_written)
    pv = Unit("@pv", f32_contraction=2 * tri * d, nbytes=tri * f + 2 * qkv)  # P read: the triangle only
    return [scores, softmax, pv], 4 * qkv


@pytest.mark.parametrize("lift", [False, True], ids=["kernel", "lifted"])
@pytest.mark.parametrize("tf32", [False, True], ids=["f32", "tf32"])
@pytest.mark.parametrize("mode", ["greedy", "producer-consumer", "none"])
def test_causal_attention(mode: str, tf32: bool, lift: bool) -> None:
    units, compulsory = attention_units()
    # greedy: one group (q, k, v read, o written). producer-consumer: softmax has reductions, so no group
    # may hold it together with a matmul: nothing fuses.
    groups, group_bytes = ([units], [compulsory]) if mode == "greedy" else ([], [])
    run = run_sol((EXAMPLES / "causal_attention.sir").read_text(), TF32_TARGETS if tf32 else TARGETS, lift=lift,
                  mode=mode, allow_tf32=tf32)
    for r in run.reports:
        check_report(r, units, groups, group_bytes, compulsory, tf32)


def test_causal_attention_counts_the_triangle() -> None:
    """The triangle, not the square: 8256 of 16384 score elements per head."""
    r = run_sol((EXAMPLES / "causal_attention.sir").read_text(), ["h100-sxm"]).reports[0]
    scores = r.units[0][0]
    assert scores.flops == 2 * 4 * 8256 * 64 < 2 * 4 * 128 * 128 * 64
    assert scores.total_bytes == 2 * 4 * 128 * 64 * 4 + 4 * 8256 * 4


# ---- conv2d (examples/conv2d.sir) ---------------------------------------------------------------------


def conv_unit(lift: bool) -> Unit:
    # Conv2d(16, 32, 3, stride=2, padding=1, dilation=2) on 1x16x32x32 -> 1x32x15x15. Input row 2p + 2r − 1
    # is in bounds for every (p, r) in 15 × 3 except (0, 0): 44 pairs per axis, so 32·16·44·44 MACs.
    macs = 32 * 16 * 44 * 44
    # Only odd rows and columns of x are ever read (2p + 2r − 1 is odd): 16 channels × 16 × 16.
    nbytes = (16 * 16 * 16 + 32 * 16 * 3 * 3 + 32 + 32 * 15 * 15) * 4
    bias_add = 32 * 15 * 15 if lift else 0  # lifted: a separate bias einsum and an add (as in the MLP)
    return Unit("@conv2d", f32_contraction=2 * macs, vector=bias_add, nbytes=nbytes)


@pytest.mark.parametrize("lift", [False, True], ids=["kernel", "lifted"])
@pytest.mark.parametrize("tf32", [False, True], ids=["f32", "tf32"])
def test_conv2d(tf32: bool, lift: bool) -> None:
    unit = conv_unit(lift)
    run = run_sol((EXAMPLES / "conv2d.sir").read_text(), TF32_TARGETS if tf32 else TARGETS, lift=lift,
                  allow_tf32=tf32)
    for r in run.reports:
        check_report(r, [unit], [], [], unit.nbytes, tf32)


def test_conv2d_bounds() -> None:
    """1.98 MFLOP, 63.7 kB: vector-bound on f32 units (H100: 29.6 ns vs 19.0 ns of memory), memory-bound with
    TF32 (4.0 ns of tensor work)."""
    f32: SolRun = run_sol((EXAMPLES / "conv2d.sir").read_text(), ["h100-sxm"], lift=False)
    tf32 = run_sol((EXAMPLES / "conv2d.sir").read_text(), ["h100-sxm"], lift=False, allow_tf32=True)
    assert f32.reports[0].units[0][1].bound == "vector"
    assert tf32.reports[0].units[0][1].bound == "memory"


# ---- a recurrent loop (examples/rnn.sir): solar.for, a slice of the input, an insert ---------------------


def test_gru_in_a_loop() -> None:
    """A GRU cell over 16 steps: every unit inside solar.for runs 16 times (docs/sol.md); per step:
    gx += Wx·x_t: 3·4·64·32 MACs, gh += Wh·h: 3·4·64·64 MACs; the gates: 13 ops per element of h (4·64);
    bytes: x_t (a slice: 4·32), h, Wx, Wh, bx, bh read, h' written; the insert reads h' and writes its rows."""
    steps, f = 16, 4
    macs = 3 * 4 * 64 * 32 + 3 * 4 * 64 * 64
    weights = (3 * 64 * 32 + 3 * 64 * 64 + 2 * 3 * 64) * f
    cell = Unit("@gru_cell", f32_contraction=2 * macs * steps, vector=13 * 4 * 64 * steps,
                nbytes=(4 * 32 * f + 4 * 64 * f + weights + 4 * 64 * f) * steps)
    insert = Unit("insert %next_0", nbytes=2 * 4 * 64 * f * steps)
    # Fused, per step: x_t, h and the weights in; h' (yielded to the next step) and the inserted rows out.
    group_bytes = (4 * 32 * f + 4 * 64 * f + weights + 2 * 4 * 64 * f) * steps
    # Whole graph: xs, h0 and the weights read once; ys (16·4·64) and h_T written.
    compulsory = 16 * 4 * 32 * f + 4 * 64 * f + weights + 16 * 4 * 64 * f + 4 * 64 * f
    run = run_sol((EXAMPLES / "rnn.sir").read_text(), TARGETS)
    for r in run.reports:
        assert [w.trips for w, _ in r.units] == [steps, steps]
        check_report(r, [cell, insert], [[cell, insert]], [group_bytes], compulsory, False)


TRIANGLE_IN_TIME = """solar.module @tri {
  solar.func @main(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %y = solar.for %t = 0 to 8 iter_args(%acc = %x) -> tensor<8x16xf32> {
      %n = solar.kernel @row(%acc as A) -> (N: tensor<8x16xf32>) {
        affine.for %i = 0 to 8 {
          affine.for %j = 0 to 16 {
            N[%i, %j] = A[%i, %j]
          }
        }
        affine.for %j = 0 to %t + 1 {
          N[%t, %j] = A[%t, %j] * 2.0
        }
      }
      solar.yield %n
    }
    solar.return %y
  }
}
"""


def test_kernel_whose_work_depends_on_the_loop_index() -> None:
    """Step t scales t + 1 elements: Σ_t (t + 1) = 36 FLOPs over 8 steps, not 8 × the first step's 1."""
    r = run_sol(TRIANGLE_IN_TIME, ["h100-sxm"], lift=False).reports[0]
    (w, t), = r.units
    assert w.trips == 8 and w.flops == 36
    assert w.total_bytes == 8 * 2 * 8 * 16 * 4  # each step reads all of A and writes all of N
    assert close(t.seconds, 8 * 2 * 8 * 16 * 4 / 3.35e12)
