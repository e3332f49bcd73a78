"""Precision as the framework runs it (docs/sol.md, "Precision"): frontends record per contraction kernel
how the framework runs f32 work by default (`fp32_precision`), the cost model prices by it, and
`--fp32-precision` overrides it."""

from __future__ import annotations

import pytest
from test_sol_support import FIGURES, close, run_passes, run_sol

from solar.backends.cost import priced_dtype
from solar.ir.dtypes import DType
from solar.ir.ops import EinsumOp, KernelOp
from solar.passes.bind_params import BindParams
from solar.passes.lift_einsum import LiftEinsum

H100 = FIGURES["h100-sxm"]


def conv_text(attr: str) -> str:
    """A 3x3 same-padding convolution, 8 -> 8 channels on 2x8x16x16 (f32), with an optional attribute."""
    attrs = f" attributes {{fp32_precision = \"{attr}\"}}" if attr else ""
    return f"""
solar.module @c {{
  solar.func @f(%x: tensor<2x8x16x16xf32>, %w: tensor<8x8x3x3xf32>) -> tensor<2x8x16x16xf32> {{
    %y = solar.kernel @conv(%x as X, %w as W) -> (Y: tensor<2x8x16x16xf32>){attrs} {{
      affine.for %n = 0 to 2 {{ affine.for %k = 0 to 8 {{ affine.for %p = 0 to 16 {{ affine.for %q = 0 to 16 {{
        affine.for %c = 0 to 8 {{ affine.for %r = 0 to 3 {{ affine.for %s = 0 to 3 {{
          affine.if %p + %r - 1 >= 0 and %p + %r - 1 < 16 and %q + %s - 1 >= 0 and %q + %s - 1 < 16 {{
            Y[%n, %k, %p, %q] += X[%n, %c, %p + %r - 1, %q + %s - 1] * W[%k, %c, %r, %s]
          }}
        }} }} }}
      }} }} }} }}
    }}
    solar.return %y
  }}
}}
"""


@pytest.mark.parametrize("lift", [False, True], ids=["kernel", "lifted"])
def test_attribute_prices_tf32_and_the_override_wins(lift: bool) -> None:
    run = run_sol(conv_text("tf32"), ["h100-sxm"], lift=lift)
    unit = run.reports[0].units[0][0]
    flops = unit.flops_tensor[DType.TF32]
    assert flops > 0 and DType.F32 not in unit.flops_tensor
    assert close(run.reports[0].units[0][1].tensor_s, flops / H100.tf32_tensor)
    # --fp32-precision=highest: the same work on the FP32 vector units, 7.4x slower on H100.
    highest = run_sol(conv_text("tf32"), ["h100-sxm"], lift=lift, fp32_precision="highest").reports[0].units[0]
    assert highest[0].flops_tensor[DType.F32] == flops and highest[1].tensor_s == 0
    assert close(highest[1].vector_s, (flops + sum(highest[0].flops_vector.values())) / H100.fp32_vector)


def test_without_the_attribute_f32_stays_fp32_unless_tf32_is_asked() -> None:
    plain = run_sol(conv_text(""), ["h100-sxm"]).reports[0].units[0]
    assert DType.TF32 not in plain[0].flops_tensor and plain[1].tensor_s == 0
    tf32 = run_sol(conv_text(""), ["h100-sxm"], fp32_precision="tf32").reports[0].units[0]
    assert tf32[0].flops_tensor[DType.TF32] == plain[0].flops_tensor[DType.F32]
    synonym = run_sol(conv_text(""), ["h100-sxm"], allow_tf32=True).reports[0].units[0]  # --allow-tf32
    assert synonym[1] == tf32[1]
    # "highest" on the attribute itself, and "bf16" (torch's "medium" matmul precision).
    assert DType.F32 in run_sol(conv_text("highest"), ["h100-sxm"]).reports[0].units[0][0].flops_tensor
    bf16 = run_sol(conv_text("bf16"), ["h100-sxm"]).reports[0].units[0]
    assert close(bf16[1].tensor_s, bf16[0].flops_tensor[DType.BF16] / H100.bf16_tensor)


def test_lift_einsum_keeps_the_attribute_on_every_einsum() -> None:
    module, _ = run_passes(conv_text("tf32"), [LiftEinsum()])
    einsums = [op for op in module.walk() if isinstance(op, EinsumOp)]
    assert einsums and all(e.attrs.get("fp32_precision") == "tf32" for e in einsums)


def test_priced_dtype_leaves_other_precisions_alone() -> None:
    module, _ = run_passes(conv_text("tf32"), [])
    kernel = next(op for op in module.walk() if isinstance(op, KernelOp))
    assert priced_dtype(kernel, DType.BF16, "framework") is DType.BF16
    assert priced_dtype(kernel, DType.F32, "framework") is DType.TF32
    assert priced_dtype(kernel, DType.F32, "highest") is DType.F32


MIXED = """
solar.module @m {
  solar.func @f(%p: tensor<64x128xf32>, %v: tensor<128x32xf16>) -> tensor<64x32xf32> {
    %y = solar.einsum @pv "ij,jk->ik" (%p as P, %v as V) -> (Y: tensor<64x32xf32>) {
      Y += P * cast<f32>(V)
    }
    solar.return %y
  }
}
"""


def test_mixed_float_operands_are_priced_at_the_narrowest() -> None:
    """An f32 × f16 contraction runs on FP16 tensor cores (a fast kernel converts the wider operand down),
    not on the FP32 vector units: 2·64·128·32 FLOPs at the FP16 peak."""
    unit, timing = run_sol(MIXED, ["h100-sxm"], lift=False).reports[0].units[0]
    assert unit.flops_tensor == {DType.F16: 2 * 64 * 128 * 32}
    assert close(timing.tensor_s, 2 * 64 * 128 * 32 / H100.bf16_tensor) and timing.vector_s == 0


torch = pytest.importorskip("torch")


def test_torch_records_its_defaults() -> None:
    """torch 2.13: cuDNN runs f32 convolutions on TF32, f32 matmuls stay FP32 ("highest")."""
    from solar.frontends.torch_export import callable_problem, torch_fp32_precision, translate_problem

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(4, 4, 3, padding=1)
            self.fc = torch.nn.Linear(16, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(self.conv(x))

    assert torch_fp32_precision() == {"conv": "tf32", "matmul": "highest", "rnn": "tf32"}
    tr = translate_problem(callable_problem(Net(), [torch.randn(2, 4, 16, 16)], "net"))
    kernels = {op.symbol: op.attrs.get("fp32_precision") for op in tr.module.walk() if isinstance(op, KernelOp)}
    assert kernels["conv2d"] == "tf32"
    assert kernels["linear"] == "highest"
    previous = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high")
        assert torch_fp32_precision()["matmul"] == "tf32"
        torch.set_float32_matmul_precision("medium")
        assert torch_fp32_precision()["matmul"] == "bf16"
    finally:
        torch.set_float32_matmul_precision(previous)


def test_jax_default_allows_tf32_and_highest_is_kept() -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from solar.frontends.jax_export import translate_jax

    a = jnp.ones((8, 16), jnp.float32)
    b = jnp.ones((16, 4), jnp.float32)
    default = translate_jax(lambda x, y: x @ y, [a, b], "mm")
    highest = translate_jax(lambda x, y: jnp.matmul(x, y, precision=jax.lax.Precision.HIGHEST), [a, b], "mm")
    for tr, expected in ((default, "tf32"), (highest, "highest")):
        (kernel,) = [op for op in tr.module.walk() if isinstance(op, KernelOp)]
        assert kernel.attrs.get("fp32_precision") == expected


# KernelBench level 1, 97: SDPA on 32x32x512x1024 float16 Q, K, V. Measured on an H100 PCIe under
# torch.compile at 8.02 ms, below the bound when P·V was priced on the FP32 vector units (issue 37).
KB97 = {"batch": 32, "heads": 32, "seq": 512, "emb": 1024}


def kb97_sdpa(dtype: torch.dtype) -> str:
    """SDPA translated at small distinct sizes with every dim a size parameter, printed with the parameters
    bound to KernelBench 97's sizes (exporting at full size would allocate and clone 3 GiB)."""
    from solar.frontends.torch_export import callable_problem, translate_problem
    from solar.ir.printer import print_module

    q, k, v = (torch.empty(shape, dtype=dtype) for shape in ((2, 3, 5, 7), (2, 3, 6, 7), (2, 3, 6, 11)))
    tr = translate_problem(callable_problem(torch.nn.functional.scaled_dot_product_attention, [q, k, v], "sdpa"),
                           dynamic="all")
    full = {2: KB97["batch"], 3: KB97["heads"], 5: KB97["seq"], 6: KB97["seq"], 7: KB97["emb"], 11: KB97["emb"]}
    values = {p.name: str(full[p.default]) for p in tr.module.params}
    module, _ = run_passes(print_module(tr.module), [BindParams(options=values)])
    return print_module(module)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
def test_half_attention_runs_both_products_on_half_tensor_cores(dtype: torch.dtype) -> None:
    """FlashAttention and cuDNN round P to V's type before P·V: both products are half-precision tensor
    work, and KernelBench 97's bound on an H100 PCIe is its compulsory traffic, below the measured 8.02 ms."""
    from solar.targets.loader import load_target

    half = DType.F16 if dtype == torch.float16 else DType.BF16
    run = run_sol(kb97_sdpa(dtype), ["h100-pcie"])
    report = run.reports[0]
    b, h, s, e = KB97["batch"], KB97["heads"], KB97["seq"], KB97["emb"]
    macs = 2 * b * h * s * s * e  # Q·Kᵀ and P·V
    (unit, _), = report.units  # the lifted einsums of the one attention kernel
    assert unit.flops_tensor == {half: 2 * macs}
    target = load_target("h100-pcie")
    fused = report.modes["fused"]
    compulsory = 4 * b * h * s * e * 2  # Q, K, V read, O written, 2 bytes each
    assert fused.bytes == compulsory
    assert close(fused.tensor_s, 2 * macs / target.peak(half.spelling, "tensor"))
    assert fused.bound == "memory" and close(fused.seconds, compulsory / target.dram_bandwidth)
    assert fused.seconds < 8.02e-3
