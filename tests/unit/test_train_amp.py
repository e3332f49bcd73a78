"""solar-translate --train --amp bf16: the step as torch.autocast runs it (contractions in bf16, casts of the
f32 master weights counted, f32 optimizer state), against a real autocast run of the same step."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from train_programs import GPT, two_layer_mlp, write_program  # noqa: E402

from solar.frontends.torch_train import (  # noqa: E402
    FusedAttention,
    load_train_problem,
    model_inputs,
    optimizer_program,
    translate_train,
    validate_train,
)
from solar.frontends.train_step import TrainOptions, TrainStep  # noqa: E402
from solar.ir import print_module  # noqa: E402
from solar.ir.ops import KernelOp  # noqa: E402
from solar.tools.solar_translate import main  # noqa: E402

MLP = """
import torch, torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 48)
        self.fc2 = nn.Linear(48, 16)
    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))
def get_inputs():
    return [torch.randn(24, 32)]
def get_init_inputs():
    return []
"""

CONTRACTIONS = ("mm", "addmm", "bmm", "baddbmm", "_scaled_dot_product_flash_attention_for_cpu",
                "_scaled_dot_product_flash_attention_for_cpu_backward", "convolution", "convolution_backward")
H100_BF16_TENSOR = 989.4e12  # targets/h100-sxm: compute.bf16_tensor (dense)
SPELLING = {torch.bfloat16: "bf16", torch.float16: "f16", torch.float32: "f32"}


CONV = """
import torch, torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(4, 8, 3, padding=1); self.conv2 = nn.Conv2d(8, 4, 3, padding=1, bias=False)
    def forward(self, x):
        return torch.tanh(x + self.conv2(torch.relu(self.conv1(x))))
def get_inputs():
    return [torch.randn(2, 4, 6, 6)]
def get_init_inputs():
    return []
"""


class ContractionTypes(TorchDispatchMode):
    """Records every contraction PyTorch runs (forward and backward) with the types of its tensor inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = func.overloadpacket.__name__
        if name in CONTRACTIONS:
            self.calls.append((name, tuple(SPELLING[a.dtype] for a in args if isinstance(a, torch.Tensor))))
        return func(*args, **(kwargs or {}))


def _ir_contractions(tr: Any) -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for op in tr.module.entry.body:
        if isinstance(op, KernelOp):
            base = re.sub(r"(_\d+)+$", "", op.symbol)
            if base in CONTRACTIONS:
                out.append((base, tuple(b.value.type.dtype.spelling for b in op.inputs)))
    return out


def _real_contractions(problem: Any, options: TrainOptions) -> list[tuple[str, tuple[str, ...]]]:
    """The contractions of a real step under torch.autocast (CPU tensors, the IR's fused attention)."""
    torch.manual_seed(0)
    step = TrainStep(problem.make_model(), 1, options)
    record = ContractionTypes()
    with FusedAttention(), record:
        step(*problem.make_inputs())
    return record.calls


def _step(path: str, options: TrainOptions, dynamic: str = "batch") -> tuple[Any, Any]:
    problem, _ = load_train_problem(path, options)
    return problem, translate_train(problem, model_inputs(problem), options, dynamic)


def _analysis(tr: Any, fuse: bool = True) -> Any:
    import solar
    from solar.training import training_report

    analysis = solar.analyze(print_module(tr.module), targets=("h100",), fuse=fuse)
    return analysis, training_report(analysis)


def test_mlp_amp_step_is_autocasts_graph_and_validates(tmp_path: Path) -> None:
    path = write_program(tmp_path, "mlp", MLP)
    options = TrainOptions("adamw", "sum", amp="bf16")
    problem, tr = _step(path, options)
    # The IR's contractions are the ones a real autocast step runs, with the same input types: the two
    # forward products and three backward ones (fc1's input needs no gradient), all in bf16.
    ir = _ir_contractions(tr)
    assert Counter(ir) == Counter(_real_contractions(problem, options))
    assert Counter(ir) == Counter({("addmm", ("bf16",) * 3): 2, ("mm", ("bf16",) * 2): 3})
    report = validate_train(problem, 1, options, tr, 0, 4, False)
    assert report.ok, report.summary()
    assert len(report.outputs) == 1 + 4 * 4  # the loss; four parameters, their two moments and step counts
    info = tr.module.attrs["train"]
    elements = 48 * 32 + 48 + 16 * 48 + 16
    assert info["amp"] == "bf16" and info["dtype"] == "bf16" and info["trained_parameters"] == elements
    # Master weights and optimizer state stay f32; every weight is cast to bf16 (4 B read, 2 B written) in
    # the forward, and every gradient back to f32 (2 B read, 4 B written) in the backward.
    assert info["parameter_bytes"] == info["gradient_bytes"] == elements * 4
    assert info["optimizer_state_bytes"] == elements * 2 * 4 + 4 * 4
    assert info["weight_cast_bytes"] == info["gradient_cast_bytes"] == elements * (4 + 2)


def test_gpt_block_amp_prices_contractions_at_the_bf16_peak(tmp_path: Path) -> None:
    path = write_program(tmp_path, "gpt", GPT)
    options = TrainOptions("adamw", "sum", amp="bf16")
    problem, tr = _step(path, options, "none")
    ir = _ir_contractions(tr)
    assert Counter(ir) == Counter(_real_contractions(problem, options))
    # Four linear layers' forwards, seven weight/input gradients (qkv's input is the norm's: it needs one),
    # the fused attention and its backward, whose log-sum-exp stays f32.
    assert len(ir) == 4 + 8 + 2 and all(set(types) - {"f32"} == {"bf16"} for _, types in ir)
    assert dict(ir)["_scaled_dot_product_flash_attention_for_cpu_backward"][-1] == "f32"
    analysis, report = _analysis(tr, fuse=False)
    tensor = Counter()  # type: Counter[str]
    for work, _ in analysis._reports[0].units:
        for dtype, flops in work.flops_tensor.items():
            tensor[dtype.spelling] += flops
    b, h, t, e, c = 2, 2, 16, 16, 32
    live = t * (t + 1) // 2
    linear = 2 * b * t * (c * 3 * c + c * c + c * 4 * c + 4 * c * c)  # the four layers' forward products
    attention = 7 * 2 * b * h * live * e + 2 * b * h * t * e  # two forward, five backward, and dO·O
    assert tensor == {"bf16": linear * 3 + attention}  # every layer: forward, input and weight gradients
    assert report.peak_flops == H100_BF16_TENSOR and report.amp == "bf16"
    for mode, seconds in report.step_seconds.items():
        assert report.mfu_bound[mode] == pytest.approx(report.model_flops / (seconds * H100_BF16_TENSOR))
    # The weights the products read are cast (the layer norm runs in f32 with its f32 weights, uncast).
    cast = 32 * 96 + 96 + 32 * 32 + 32 + 32 * 128 + 128 + 128 * 32 + 32
    assert report.cast_bytes == {"weight": cast * 6, "gradient": cast * 6}
    # AdamW runs on the f32 master weights: the optimizer phase is the f32 update's, whose whole traffic is
    # 4 reads and 3 writes of 4 B per parameter (and each step count read and written).
    params = [torch.empty(tuple(p.shape), device="meta") for p in problem.make_model().parameters()]
    from solar.frontends.torch_lowering import GraphLowering

    alone = GraphLowering(optimizer_program("adamw", params), "adamw").lower()  # type: ignore[arg-type]
    opt_analysis, _ = _analysis(alone, fuse=True)
    elements = sum(p.numel() for p in params)
    assert opt_analysis.totals["h100-sxm"]["whole_graph"].bytes == elements * 7 * 4 + len(params) * 2 * 4
    unfused = _analysis(alone, fuse=False)[0]
    assert report.phases["optimizer"].bytes == sum(u.bytes for u in unfused.units)
    assert report.phases["optimizer"].flops == sum(u.flops for u in unfused.units)
    assert report.memory["optimizer_state"] == elements * 2 * 4 + len(params) * 4
    valid = validate_train(problem, 1, options, tr, 0, 4, False)
    assert valid.ok, valid.summary()


def test_compute_bound_product_runs_at_the_bf16_tensor_peak(tmp_path: Path) -> None:
    body = MLP.replace("nn.Linear(32, 48)", "nn.Linear(1024, 1024)").replace("nn.Linear(48, 16)",
                                                                            "nn.Linear(1024, 1024)")
    path = write_program(tmp_path, "wide", body.replace("torch.randn(24, 32)", "torch.randn(2048, 1024)"))
    _, tr = _step(path, TrainOptions("sgd", "sum", amp="bf16"), "none")
    analysis, _ = _analysis(tr, fuse=False)
    products = [u for u in analysis.units if u.name.lstrip("@").startswith(("mm", "addmm"))]
    assert len(products) == 5
    for u in products:  # 2·2048·1024² FLOPs over 2·(2048·1024 + 1024² + 2048·1024) B: compute-bound in bf16
        assert u.flops == 2 * 2048 * 1024 * 1024 + (2048 * 1024 if u.name.lstrip("@").startswith("addmm") else 0)
        # the product at the bf16 tensor peak (an addmm's bias add, vector work, overlaps it)
        assert u.seconds["h100-sxm"] == pytest.approx(2 * 2048 * 1024 * 1024 / H100_BF16_TENSOR, rel=1e-12)


def test_conv_step_in_fp16_accumulates_gradients_in_f32(tmp_path: Path) -> None:
    path = write_program(tmp_path, "conv", CONV)
    options = TrainOptions("sgd", "sum", amp="fp16")
    problem, tr = _step(path, options, "all")
    ir = _ir_contractions(tr)
    real = _real_contractions(problem, options)
    # convolution_backward lowers to a kernel per gradient: conv1's weight and bias gradients (its input
    # needs none), conv2's input and weight gradients; each reads the op's f16 inputs it needs.
    assert Counter(name for name, _ in real) == {"convolution": 2, "convolution_backward": 2}
    assert Counter(name for name, _ in ir) == {"convolution": 2, "convolution_backward": 4}
    assert {types for _, types in real} == {("f16", "f16", "f16"), ("f16", "f16")}  # conv2 has no bias
    assert all(set(types) == {"f16"} for _, types in ir)
    text = print_module(tr.module)
    assert "local acc: tensor<8x4x3x3xf32>" in text  # conv2's weight gradient, summed in f32 then rounded
    report = validate_train(problem, 1, options, tr, 0, 4, False)
    assert report.ok, report.summary()
    # The loss is f32 (the residual adds the f32 input to an f16 output: type promotion), the weights f32;
    # then GradScaler's scale (f32) and growth tracker (i32).
    assert [c.dtype for c in report.outputs] == ["f32"] * 5 + ["i32"]


def test_forward_program_under_amp(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "mlp.sir"
    assert main([write_program(tmp_path, "mlp", MLP), "--amp", "bf16", "-o", str(out)]) == 0
    text = out.read_text()
    assert "// Mixed precision: torch.autocast(dtype=torch.bfloat16) with CUDA's op policy around the forward" in text
    assert "// Validation: passed" in text
    assert "-> tensor<BATCHx16xbf16>" in text  # the last product's output, in bf16 as autocast returns it
    assert text.count("cast<bf16>(A[") == 5  # the four weights and the input, cast once each


def test_analyze_train_amp_and_accumulate() -> None:
    import solar

    analysis = solar.analyze(two_layer_mlp(), (torch.randn(16, 32),), train=True, optimizer="sgd", amp="bf16")
    report = analysis.training
    assert report.amp == "bf16" and report.peak_flops == H100_BF16_TENSOR
    elements = 2 * 32 * 64
    assert report.cast_bytes == {"weight": elements * 6, "gradient": elements * 6}
    assert report.memory["parameter"] == report.memory["gradient"] == elements * 4  # f32 master weights
    assert "mixed precision bf16" in report.text()
    # Two micro-batches, each in its own autocast region (autocast's cache of weight casts lives within one):
    # each casts the weights again, and each one's weight gradients come back to f32 before they add up.
    options = TrainOptions("sgd", "sum", accumulate=2, amp="bf16")
    tr = translate_train(_torch_problem(two_layer_mlp(), (torch.randn(16, 32),)), 1, options, "batch")
    info = tr.module.attrs["train"]
    assert info["weight_cast_bytes"] == info["gradient_cast_bytes"] == 2 * elements * 6
    assert info["tokens"] == 2 * 16


def _torch_problem(model: torch.nn.Module, inputs: tuple[Any, ...]) -> Any:
    from solar.frontends.torch_problem import TorchProblem

    def make_inputs() -> list[Any]:
        return [torch.randn(x.shape) for x in inputs] * 2  # two micro-batches

    return TorchProblem(lambda: model, make_inputs, "mlp")


def test_cuda_policy_is_read_from_torchs_cuda_autocast_kernels(tmp_path: Path) -> None:
    from solar.frontends.autocast_policy import cuda_policy, probe_policy

    policy = probe_policy()
    assert {policy[f"aten::{op}"] for op in ("mm", "addmm", "bmm", "baddbmm", "linear", "convolution",
                                             "scaled_dot_product_attention")} == {"low"}
    assert {policy[f"aten::{op}"] for op in ("layer_norm", "native_layer_norm", "group_norm", "exp", "log",
                                             "rsqrt", "mse_loss", "nll_loss", "softmax.int")} == {"f32"}
    assert {policy[f"aten::{op}"] for op in ("sum", "sum.dim_IntList", "cumsum", "prod")} == {"f32_dtype"}
    assert {policy[f"aten::{op}"] for op in ("addcmul", "addcdiv", "index_put")} == {"promote"}
    assert "aten::relu" not in policy and "aten::gelu" not in policy  # run in their inputs' type
    x = torch.randn(4, 8, dtype=torch.bfloat16)
    with cuda_policy(), torch.autocast("cpu", dtype=torch.bfloat16):
        assert F.layer_norm(x, [8]).dtype == x.sum().dtype == x.softmax(-1).dtype == torch.float32
        assert (torch.randn(4, 8) @ torch.randn(8, 2)).dtype == torch.relu(x).dtype == torch.bfloat16
    with torch.autocast("cpu", dtype=torch.bfloat16):  # the registrations are gone: CPU's own policy again
        assert F.layer_norm(x, [8]).dtype == torch.bfloat16
    # In a step: the norm of a bf16 product runs in f32, and the next product casts its output back.
    norm = MLP.replace("self.fc2 = nn.Linear(48, 16)", "self.ln = nn.LayerNorm(48); self.fc2 = nn.Linear(48, 16)")
    _, tr = _step(write_program(tmp_path, "norm", norm.replace("torch.relu(", "self.ln(")), TrainOptions(
        "sgd", "sum", amp="bf16"), "none")
    kernels = {op.symbol: op for op in tr.module.entry.body if isinstance(op, KernelOp)}
    layer_norm = kernels["native_layer_norm"]
    assert [b.value.type.dtype.spelling for b in layer_norm.inputs] == ["f32", "f32", "f32"]
    assert layer_norm.outputs[0].type.dtype.spelling == "f32"
    assert "cast<bf16>(A[" in str(print_module(tr.module)).split("@native_layer_norm(")[1].split("@addmm_1")[0]


def test_bad_amp_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import solar
    from solar.errors import BadOptionError

    out = tmp_path / "kept.sir"
    out.write_text("old")
    code = main([write_program(tmp_path, "mlp", MLP), "--train", "--amp", "int3", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "--amp" in err and "int3" in err, err
    assert out.read_text() == "old"
    with pytest.raises(BadOptionError, match="bad amp 'int3'"):
        solar.analyze(torch.nn.Linear(4, 4), (torch.randn(2, 4),), train=True, amp="int3")
