"""solar-translate --train: a training step's SIR, its counts against FlopCounterMode, its validation against
PyTorch's own `loss.backward()` and `optimizer.step()`, and the refusals of programs that cannot train."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

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


def _file(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


def _contraction_flops(sir: str) -> dict[str, int]:
    import solar

    analysis = solar.analyze(sir, fuse=False)
    return {u.name.lstrip("@"): u.flops for u in analysis.units if u.name.lstrip("@").startswith(("mm", "bmm"))}


def test_mlp_step_counts_equal_flop_counter_and_validate(tmp_path: Path) -> None:
    from torch.utils.flop_counter import FlopCounterMode

    path = _file(tmp_path, "mlp", MLP)
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
    path = _file(tmp_path, "mlp", MLP.replace("bias=False", "bias=True"))
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
    path = _file(tmp_path, "mlp", MLP)
    code, err = _run([path, "--train", "--loss", "mse", "-o", str(out)], capsys)
    assert code == 1 and err.count("\n") == 1 and "defines no get_targets()" in err
    frozen = _file(tmp_path, "frozen", MLP.replace("self.fc2 = nn.Linear(48, 16, bias=False)",
                                                   "self.fc2 = nn.Linear(48, 16, bias=False)\n"
                                                   "        self.requires_grad_(False)"))
    code, err = _run([frozen, "--train", "-o", str(out)], capsys)
    assert code == 1 and err.count("\n") == 1 and "no parameter that requires grad" in err
    assert out.read_text() == "old"
