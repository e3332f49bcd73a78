"""Loss scaling with --amp fp16 (frontends/train_scaler.py): GradScaler's unscale, inf/nan check and scale
update counted in the step, validated against PyTorch's own GradScaler step."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from train_programs import write_program  # noqa: E402

from solar.frontends.torch_train import load_train_problem, translate_train, validate_train  # noqa: E402
from solar.frontends.train_scaler import scaler_defaults, update_scale_  # noqa: E402
from solar.frontends.train_step import TrainOptions  # noqa: E402
from solar.ir import print_module  # noqa: E402

MLP = """
import torch, torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(8, 16)
        self.down = nn.Linear(16, 8, bias=False)
    def forward(self, x):
        return self.down(torch.relu(self.up(x)))
def get_inputs():
    return [torch.randn(64, 8)]
def get_init_inputs():
    return []
"""
ELEMENTS = 8 * 16 + 16 + 16 * 8  # the trained parameters, each with an f32 gradient


def test_fp16_step_unscales_and_checks_every_gradient(tmp_path: Path) -> None:
    import solar
    from solar.training import training_report

    options = TrainOptions("adamw", "sum", amp="fp16")
    problem, _ = load_train_problem(write_program(tmp_path, "mlp", MLP), options)
    tr = translate_train(problem, 1, options, "batch")
    assert tr.state[-2:] == ["scaler.scale", "scaler.growth_tracker"]
    info = tr.module.attrs["train"]
    analysis = solar.analyze(print_module(tr.module), targets=("h100",))
    units = {u.name.lstrip("@"): u for u in analysis.units}
    scaling = [units[k] for k in info["loss_scaling"]]
    assert set(info["loss_scaling"]) <= set(info["optimizer"])
    # The unscale: one multiply per gradient element (the scale's own updates are scalars); the check reads
    # every gradient (f32) and writes one flag per element.
    per_gradient = [u for u in scaling if u.name.lstrip("@").startswith("mul") and u.flops > 1]
    assert sum(u.flops for u in per_gradient) == ELEMENTS
    checks = [u for u in scaling if u.name.lstrip("@").startswith("isfinite") and u.bytes > 4 + 1]  # not the scale's
    assert sum(u.bytes for u in checks) == ELEMENTS * (4 + 1)
    report = training_report(analysis)
    assert report.loss_scaling is not None and report.loss_scaling.kernels == len(scaling)
    # The check is a barrier between the backward and the update: the gradients go through DRAM.
    whole = analysis.totals["h100-sxm"]["whole_graph"]
    bandwidth = solar.targets.loader.load_target("h100").dram_bandwidth
    expected = (whole.bytes + 2 * report.memory["saved_activation"] + 2 * ELEMENTS * 4) / bandwidth
    assert report.step_seconds["whole_graph_saved"] == pytest.approx(max(whole.seconds, expected))
    assert "loss scaling (GradScaler)" in report.text()
    validation = validate_train(problem, 1, options, tr, 0, 4, False)
    assert validation.ok, validation.summary()
    assert len(validation.outputs) == 1 + 3 * 4 + 2  # the scaled loss, params and AdamW state, scale and tracker


@pytest.mark.parametrize("found_inf", [0.0, 1.0])
@pytest.mark.parametrize("tracker", [0, 5, "last"])
@pytest.mark.parametrize("scale", [1024.0, 3e38])
def test_scale_update_is_torch_amp_update_scale(found_inf: float, tracker: int | str, scale: float) -> None:
    """The scale update as written for export equals GradScaler's own kernel: back off on an inf, grow at the
    growth interval unless the grown scale overflows, else count the step."""
    hyper = scaler_defaults()
    count = hyper["growth_interval"] - 1 if tracker == "last" else int(tracker)
    ours = torch.tensor(scale), torch.tensor(count, dtype=torch.int32)
    theirs = torch.tensor(scale), torch.tensor(count, dtype=torch.int32)
    update_scale_(*ours, torch.tensor(found_inf), hyper)
    torch._amp_update_scale_(*theirs, torch.tensor(found_inf), hyper["growth_factor"], hyper["backoff_factor"],
                             hyper["growth_interval"])
    assert ours[0].item() == theirs[0].item() and ours[1].item() == theirs[1].item()
