"""The training step's report under --precision-floor (api/training.py): the step is priced at the floor, so its
MFU bound is against the floor's peak where that is faster; the report says so, in the one time formatter."""

from __future__ import annotations

import pytest

from solar.training import PhaseCost, build_report

PHASES = {"forward": PhaseCost("forward", 2, 4 * 10**12, 10**9, 1e-3),
          "backward": PhaseCost("backward", 4, 8 * 10**12, 2 * 10**9, 2e-3),
          "optimizer": PhaseCost("optimizer", 1, 10**6, 10**8, 3e-5)}
INFO = {"dtype": "f32", "trained_parameters": 10**9, "tokens": 2048}


@pytest.mark.parametrize(("dtype", "floor", "peak"), [("f32", None, 66.9e12), ("f32", "bf16", 989.4e12),
                                                      ("bf16", "bf16", 989.4e12), ("f32", "fp8", 1979e12)])
def test_the_mfu_bound_is_against_the_peak_the_step_is_priced_at(dtype: str, floor: str | None,
                                                                  peak: float) -> None:
    report = build_report("h100", PHASES, {"fused": 0.2}, None, {**INFO, "dtype": dtype}, floor)
    assert report.peak_flops == pytest.approx(peak)
    assert report.mfu_bound["fused"] == pytest.approx(12 * 10**12 / (0.2 * peak))
    text = report.text()
    assert ("  precision floor" in text) is (floor is not None)
    assert "  step SOL fused                 200 ms   MFU bound" in text and " us" not in text
    assert "  optimizer     1 kernels         1,000,000 FLOP     100,000,000 B  unfused SOL 30 µs" in text


def test_the_report_names_the_floor_and_its_peak() -> None:
    text = build_report("h100", PHASES, {"fused": 0.2}, None, INFO, "bf16").text()
    assert ("  precision floor bf16 in force: contractions priced at bf16 where that is faster; MFU bound against "
            "989 TFLOP/s\n") in text
