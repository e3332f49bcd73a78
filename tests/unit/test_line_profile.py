"""The measured share of each source line (bench/line_profile.py): torch.profiler ranges named after the
user's calling line, library frames (torch.nn) skipped; the shares add up to one."""

from __future__ import annotations

import math
from pathlib import Path

import torch

from solar.bench.line_profile import LineProfile, add_measured, profile_lines

HERE = str(Path(__file__).resolve())


class Two(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        return torch.tanh(h) + 1


def test_each_call_is_timed_at_the_users_line() -> None:
    model, x = Two().eval(), torch.randn(4, 16)
    profile = profile_lines(lambda: model(x), runs=2)
    first = Two.forward.__code__.co_firstlineno
    assert set(profile.seconds) == {(HERE, first + 1), (HERE, first + 2)}  # fc's F.linear is its caller's line
    assert all(t > 0 for t in profile.seconds.values())
    assert math.isclose(sum(profile.share(*k) or 0.0 for k in profile.seconds), 1.0)
    assert profile.share(HERE, 1) is None


def test_the_document_gets_shares_and_the_machines_headroom() -> None:
    profile = LineProfile({("/m.py", 3): 3e-6, ("/m.py", 4): 1e-6}, runs=2)
    line = {"file": "/m.py", "line": 3, "unfused_s": 1e-6}
    other = {"file": None, "line": None, "unfused_s": 0.0}
    doc = {"targets": [{"name": "host", "source_lines": [dict(line), dict(other)]},
                       {"name": "h100-sxm", "source_lines": [dict(line)]}]}
    add_measured(doc, profile, "host")
    host, h100 = doc["targets"][0]["source_lines"], doc["targets"][1]["source_lines"]
    assert (host[0]["measured_s"], host[0]["measured_share"], host[0]["headroom"]) == (3e-6, 0.75, 3.0)
    assert host[1]["measured_s"] is None and host[1]["headroom"] is None
    assert h100[0]["measured_share"] == 0.75 and h100[0]["headroom"] is None  # not the measuring machine
