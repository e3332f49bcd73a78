"""solar-translate --train: a training step's SIR, its counts against FlopCounterMode, its validation against
PyTorch's own `loss.backward()` and `optimizer.step()`, and the refusals of programs that cannot train."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from train_programs import GPT, two_layer_mlp, write_program  # noqa: E402

from solar.frontends.torch_train import load_train_problem, model_inputs, translate_train, validate_train  # noqa: E402
from solar.frontends.train_step import TrainOptions  # noqa: E402
from solar.ir import print_module  # noqa: E402
from solar.tools.solar_translate import main  # noqa: E402

MLP = """
import torch, torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 48, bias=False)
        self.fc2 = nn.Linear(48, 16, bias=False)
    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))
def get_inputs():
    return [torch.randn(24, 32)]
def get_init_inputs():
    return []
"""


def _contraction_flops(sir: str) -> dict[str, int]:
    import solar

    analysis = solar.analyze(sir, fuse=False)
    return {u.name.lstrip("@"): u.flops for u in analysis.units if u.name.lstrip("@").startswith(("mm", "bmm"))}


def test_mlp_step_counts_equal_flop_counter_and_validate(tmp_path: Path) -> None:
    from torch.utils.flop_counter import FlopCounterMode

    path = write_program(tmp_path, "mlp", MLP)
    options = TrainOptions("none", "sum")
    problem, _ = load_train_problem(path, options)
    tr = translate_train(problem, model_inputs(problem), options, "batch")
    flops = _contraction_flops(print_module(tr.module))
    with torch.device("meta"):
        model = problem.make_model()
        x = problem.make_inputs()[0]
    counter = FlopCounterMode(display=False)
    with counter:
        model(x).sum().backward()
    assert sum(flops.values()) == counter.get_total_flops() == 2 * 24 * (32 * 48 * 2 + 48 * 16 * 3)
    # fc2's backward (input and weight gradients) is exactly twice its forward; fc1's input needs no gradient.
    assert sorted(flops.values()) == sorted([2 * 24 * 32 * 48] * 2 + [2 * 24 * 48 * 16] * 3)
    report = validate_train(problem, 1, options, tr, 0, 4, False)
    assert report.ok, report.summary()
    assert len(report.outputs) == 1 + 2  # the loss and both weight gradients


def test_adamw_step_updates_equal_torch_optim(tmp_path: Path) -> None:
    path = write_program(tmp_path, "mlp", MLP.replace("bias=False", "bias=True"))
    options = TrainOptions("adamw", "sum")
    problem, _ = load_train_problem(path, options)
    tr = translate_train(problem, 1, options, "batch")
    assert tr.state[:4] == ["model.fc1.weight", "model.fc1.bias", "model.fc2.weight", "model.fc2.bias"]
    assert "optim.exp_avg_sq__model__fc2__bias" in tr.state and len(tr.state) == 4 * 4
    report = validate_train(problem, 1, options, tr, 0, 4, False)
    assert report.ok, report.summary()
    assert len(report.outputs) == 1 + 16


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().err


def test_refusals_are_one_line_and_keep_the_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "kept.sir"
    out.write_text("old")
    path = write_program(tmp_path, "mlp", MLP)
    code, err = _run([path, "--train", "--loss", "mse", "-o", str(out)], capsys)
    assert code == 1 and err.count("\n") == 1 and "defines no get_targets()" in err
    frozen = write_program(tmp_path, "frozen", MLP.replace("self.fc2 = nn.Linear(48, 16, bias=False)",
                                                   "self.fc2 = nn.Linear(48, 16, bias=False)\n"
                                                   "        self.requires_grad_(False)"))
    code, err = _run([frozen, "--train", "-o", str(out)], capsys)
    assert code == 1 and err.count("\n") == 1 and "no parameter that requires grad" in err
    detached = write_program(tmp_path, "detached",
                             MLP.replace("return self.fc2(", "return self.fc2.weight.detach().sum() * ("))
    code, err = _run([detached, "--train", "-o", str(out)], capsys)
    assert code == 1 and err.count("\n") == 1 and "the backward failed" in err, err
    assert out.read_text() == "old"


def test_adamw_traffic_is_four_reads_and_three_writes_per_parameter() -> None:
    import solar
    from solar.frontends.torch_lowering import GraphLowering
    from solar.frontends.torch_train import optimizer_program

    params = [torch.empty(256, 128, device="meta"), torch.empty(128, device="meta")]
    tr = GraphLowering(optimizer_program("adamw", params), "adamw").lower()  # type: ignore[arg-type]
    totals = solar.analyze(print_module(tr.module), targets=("h100",)).totals["h100-sxm"]
    elements = 256 * 128 + 128
    # p, g, m, v read and p, m, v written, in f32; and each parameter's step count read and written.
    assert totals["whole_graph"].bytes == elements * (4 + 3) * 4 + len(params) * 2 * 4
    assert totals["fused"].bytes == totals["whole_graph"].bytes  # the update fuses into one pass per parameter


def test_analyze_train_splits_the_step_by_phase() -> None:
    import solar

    analysis = solar.analyze(two_layer_mlp(), (torch.randn(16, 32),), train=True, optimizer="sgd")
    report = analysis.training
    macs = 16 * 32 * 64
    assert report.phases["forward"].flops >= 2 * 2 * macs  # two layers' products, then the ReLU and the loss
    contractions = {u.name.lstrip("@"): u.flops for u in analysis.units if u.name.lstrip("@").startswith("mm")}
    assert sum(contractions.values()) == 2 * macs * (2 + 3)  # forward 2 products; backward 3 (fc1's input needs none)
    assert report.trained_parameters == 2 * 32 * 64 and report.tokens == 16
    assert report.six_n_tokens == 6 * 2 * 32 * 64 * 16
    m = report.memory
    assert m["parameter"] == m["gradient"] == 2 * 32 * 64 * 4 and m["optimizer_state"] == 0  # plain SGD keeps none
    assert m["peak_live"] == m["parameter"] + max(m["saved_activation"], m["gradient"])
    assert report.fits
    dp = report.data_parallel(4)
    assert dp["allreduce_seconds"] == pytest.approx(2 * 3 / 4 * m["gradient"] / (900e9 / 2))


def _tensor_flops(problem_path: str, optimizer: str = "none") -> int:
    """The step's contraction FLOPs (forward and backward), as the cost model prices them on tensor cores."""
    import solar

    options = TrainOptions(optimizer, "sum")
    problem, _ = load_train_problem(problem_path, options)
    tr = translate_train(problem, model_inputs(problem), options, "none")
    analysis = solar.analyze(print_module(tr.module), fuse=False)
    return sum(sum(w.flops_tensor.values()) for w, _ in analysis._reports[0].units)


def _flop_counter(problem_path: str) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    options = TrainOptions("none", "sum")
    problem, _ = load_train_problem(problem_path, options)
    with torch.device("meta"):
        model, inputs = problem.make_model(), problem.make_inputs()
    counter = FlopCounterMode(display=False)
    with counter:
        model(*inputs).sum().backward()
    return counter.get_total_flops()


@pytest.mark.parametrize("causal", [True, False], ids=["gpt", "vit"])
def test_transformer_block_counts_equal_flop_counter_but_for_causal_pairs(tmp_path: Path, causal: bool) -> None:
    path = write_program(tmp_path, "block", GPT if causal else GPT.replace("is_causal=True", "is_causal=False"))
    b, h, t, e = 2, 2, 16, 16
    live = t * (t + 1) // 2 if causal else t * t
    # FlopCounterMode (the math backend on the meta device) counts six full T×T products (two forward, four
    # backward, the probabilities saved); the fused attention here iterates live pairs only, and its backward
    # recomputes Q·Kᵀ from the saved log-sum-exp: seven products over the live pairs, and the backward's
    # row sums dO·O (FlashAttention's D).
    expected = _flop_counter(path) - 6 * 2 * b * h * t * t * e + 7 * 2 * b * h * live * e + 2 * b * h * t * e
    assert _tensor_flops(path) == expected


RESBLOCK = """
import torch, torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(8, 8, 3, padding=1, bias=False); self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False); self.bn2 = nn.BatchNorm2d(8)
    def forward(self, x):
        return torch.relu(x + self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x))))))
def get_inputs():
    return [torch.randn(2, 8, 6, 6)]
def get_init_inputs():
    return []
"""


def test_resnet_block_counts_equal_flop_counter_but_for_padding_taps(tmp_path: Path) -> None:
    path = write_program(tmp_path, "resblock", RESBLOCK)
    n, c, hw = 2, 8, 6
    padded, taps = 9 * hw * hw, (3 * hw - 2) ** 2  # a 3x3 window over the padded input, and the taps that exist
    # conv1: forward and weight gradient (its input needs none); conv2: forward, input and weight gradients.
    convs = 5
    expected = _flop_counter(path) - convs * 2 * n * c * c * (padded - taps)
    assert _tensor_flops(path) == expected
    # The same step with symbolic sizes, validated at reduced sizes: both batch norms' backward scale by
    # 1/(N·H·W), a SymFloat of the export, which must follow the sizes.
    options = TrainOptions("none", "sum")
    problem, _ = load_train_problem(path, options)
    tr = translate_train(problem, 1, options)
    report = validate_train(problem, 1, options, tr, 0, 4, False)
    assert report.ok, report.summary()
    assert report.sizes["BATCH"] == 2 and len(report.outputs) == 1 + 6 + 6  # loss, gradients, running stats


CONV_BN = """
import torch, torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1); self.bn = nn.BatchNorm2d(4)
    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))
def get_inputs():
    return [torch.randn(2, 4, 6, 6)]
def get_init_inputs():
    return []
"""


@pytest.mark.parametrize("optimizer", ["none", "sgd", "adamw"])
def test_conv_batch_norm_step_validates_at_reduced_sizes(tmp_path: Path, optimizer: str) -> None:
    """A convolution before a training batch norm: the gradient reaching the convolution carries the batch
    norm's 1/(N·H·W), a SymFloat of the dynamic export, computed from the size parameters in the IR (it was
    specialized to its hint, rounded to 0, and the conv weight gradient was off by the whole mean term)."""
    options = TrainOptions(optimizer, "sum")
    problem, _ = load_train_problem(write_program(tmp_path, "conv_bn", CONV_BN), options)
    tr = translate_train(problem, 1, options)
    sir = print_module(tr.module)
    assert "cast<f32>(1.0 / (cast<f64>(4 * BATCH * DIM1 * DIM2) / 4.0))" in sir
    report = validate_train(problem, 1, options, tr, 0, 4, False)
    assert report.ok, report.summary()
    assert report.sizes == {"BATCH": 2, "DIM1": 4, "DIM2": 4}
    # The conv weight's gradient (optimizer none) or its updated value, compared element by element.
    weights = [c.ok for c in report.outputs if c.shape == (4, 4, 3, 3)]
    assert weights == [True] * {"none": 1, "sgd": 1, "adamw": 3}[optimizer]  # with adamw's two moments


GQA = """
import torch, torch.nn as nn, torch.nn.functional as F
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(32, 32); self.kv = nn.Linear(32, 32); self.proj = nn.Linear(32, 32)
    def forward(self, x):
        B, T, C = x.shape
        q = self.q(x).view(B, T, 4, 8).transpose(1, 2)
        k, v = (t.reshape(B, T, 2, 8).transpose(1, 2) for t in self.kv(x).split(16, dim=-1))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.proj(a.transpose(1, 2).reshape(B, T, C))
def get_inputs():
    return [torch.randn(2, 16, 32)]
def get_init_inputs():
    return []
"""


def test_grouped_query_attention_reads_the_shared_heads(tmp_path: Path) -> None:
    """enable_gqa: the fused attention and its backward read each key-value head where its group of query
    heads reads it, and sum dK, dV over the group inside the kernel; the same step with K and V repeated to
    the query heads in the source does the same products, and moves the copies' and the group sums' bytes."""
    import solar

    def step(name: str, source: str) -> tuple[dict[str, int], dict[str, int], int]:
        options = TrainOptions("none", "sum")
        problem, _ = load_train_problem(write_program(tmp_path, name, source), options)
        tr = translate_train(problem, 1, options, "batch")
        report = validate_train(problem, 1, options, tr, 0, 4, False)
        assert report.ok, report.summary()
        analysis = solar.analyze(print_module(tr.module), fuse=False)
        flops = {u.name.lstrip("@"): u.flops for u in analysis.units}
        info = tr.module.attrs["train"]
        attention = {k: v for k, v in flops.items() if k.startswith("_scaled_dot_product_flash")}
        return attention, flops, sum(u.bytes for u in analysis.units if u.name.lstrip("@") in info["backward"])

    grouped, grouped_flops, grouped_bytes = step("gqa", GQA)
    repeated, repeated_flops, repeated_bytes = step("repeated", GQA.replace(
        "is_causal=True, enable_gqa=True", "is_causal=True").replace(
        "a = F.scaled", "k, v = k.repeat_interleave(2, 1), v.repeat_interleave(2, 1)\n        a = F.scaled"))
    assert sorted(grouped.values()) == sorted(repeated.values())  # the same products over the same live pairs
    # The repeated step's backward sums dK and dV over each group of 2 heads (B·T·hd per key-value head each):
    # work and traffic the grouped kernel does not have.
    assert sum(repeated_flops.values()) - sum(grouped_flops.values()) >= 2 * 2 * 2 * 16 * 8
    assert grouped_bytes < repeated_bytes
