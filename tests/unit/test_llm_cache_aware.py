"""`solar-llm --cache-aware`: the cache-aware mode (a tiling search at the target's L2 per point) in the
tables and the JSON, never below the fused mode (docs/llm.md, "Cache-aware mode")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from solar.tools.solar_llm import run

CONFIGS = Path(__file__).parent / "data" / "hf_configs"


def test_cache_aware_points_in_tables_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "llm.json"
    assert run([str(CONFIGS / "tiny-llama.json"), "--phase", "decode", "--batch", "1,4", "--context", "64",
                "--cache-aware", "--no-validate", "--json", str(out)]) == 0
    assert "cache-aware" in capsys.readouterr().out
    points = json.loads(out.read_text())["points"]
    by = {(p["phase"], p["batch"], p["mode"]): p for p in points}
    assert len(points) == 2 * 4  # batches × modes
    for phase in ("decode",):
        for batch in (1, 4):
            fused, tiled = by[(phase, batch, "fused")], by[(phase, batch, "cache-aware")]
            # The same work; the traffic at a finite L2 is never below the fused traffic.
            assert tiled["flops"] == fused["flops"] and tiled["macs"] == fused["macs"]
            assert tiled["bytes"] >= fused["bytes"] and tiled["time_s"] >= fused["time_s"]
            assert tiled["bound"] in ("memory", "compute") and tiled["fits"] is True
    crossovers = json.loads(out.read_text())["crossovers"]
    assert {c["mode"] for c in crossovers} == {"unfused", "fused", "cache-aware", "whole-graph"}
