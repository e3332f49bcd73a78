"""The verdict (backends/sol_verdict.py): what bounds the program and the places to act, with their gains,
the same in the JSON document, the terminal, the HTML page and `Analysis.verdict`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solar.tools.solar_opt import run

ROOT = Path(__file__).resolve().parents[2]
MLP = ROOT / "examples" / "mlp.sir"
LAYERNORM = ROOT / "examples" / "layernorm.sir"


def _report(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str, example: Path = MLP
            ) -> tuple[dict, str]:
    js = tmp_path / "r.json"
    code = run([str(example), "--lift-einsum", "--fuse", "--sol=h100", "--sol-report", str(js), *extra,
                "-o", str(tmp_path / "o.sir")])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(js.read_text()), out.out + out.err


def test_precision_action_is_the_tf32_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """f32 matmuls on CUDA cores: the gain of allowing TF32 is the fused SOL of the --allow-tf32 run."""
    doc, text = _report(tmp_path, capsys)
    tf32, _ = _report(tmp_path, capsys, "--allow-tf32")
    v = doc["targets"][0]["verdict"]
    precision = next(a for a in v["actions"] if a["kind"] == "precision")
    fused, fused_tf32 = doc["targets"][0]["modes"]["fused"]["time_s"], tf32["targets"][0]["modes"]["fused"]["time_s"]
    assert precision["factor"] == pytest.approx(fused / fused_tf32, rel=1e-12)
    assert precision["gain_s"] == pytest.approx(fused - fused_tf32, rel=1e-12)
    assert precision["where"] == ["@fc1", "@fc2"]
    assert v["bound"]["by"] == "vector" and v["bound"]["compute"]["precision"] == "fp32"
    # Under TF32 there is nothing left to allow.
    assert not any(a["kind"] == "precision" for a in tf32["targets"][0]["verdict"]["actions"])
    assert doc["verdict"][0].startswith("On h100-sxm (NVIDIA H100 SXM5 80GB), the fused SOL is 1.51 µs, bound by "
                                        "compute: f32 work on fp32 vector units")
    assert text.startswith("Verdict:\n  On h100-sxm")
    assert f"would cut the fused SOL by {fused / fused_tf32:.3g}×" in doc["verdict"][1]


def test_fusion_saving_is_unfused_less_fused_across_the_boundary(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """relu → fc2 (B = 64): apart, relu writes A (64×1024 f32 = 262,144 B) and fc2 reads it back; as one
    kernel neither happens: 524,288 B saved. fc1 → relu saves H's write and read alike."""
    doc, _ = _report(tmp_path, capsys, "--allow-tf32")
    fusions = {tuple(a["where"]): a for a in doc["targets"][0]["verdict"]["actions"] if a["kind"] == "fusion"}
    assert fusions[("@relu", "@fc2")]["saves_bytes"] == 2 * 64 * 1024 * 4
    assert fusions[("@fc1", "@relu")]["saves_bytes"] == 2 * 64 * 1024 * 4
    assert all(a["in_fused"] for a in fusions.values())  # one greedy group holds all three
    bandwidth = doc["targets"][0]["dram_bandwidth"]
    relu = next(u for u in doc["targets"][0]["units"] if u["name"] == "@relu")
    # relu is memory-bound and fc2 is not: the saving in time is relu's whole time (its bytes leave).
    assert fusions[("@relu", "@fc2")]["gain_s"] == pytest.approx(relu["time_s"], rel=1e-9)
    assert relu["time_s"] == pytest.approx(relu["bytes"] / bandwidth)


def test_memory_bound_and_launch_bound(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc, _ = _report(tmp_path, capsys, example=LAYERNORM)
    v = doc["targets"][0]["verdict"]
    assert v["bound"]["by"] == "memory"
    assert "bound by bandwidth" in doc["verdict"][0]
    units = doc["targets"][0]["units"]
    short = [u for u in units if 0 < u["time_s"] < 2e-6]
    assert (v["launch_bound"] or {}).get("units", 0) == len(short)


def test_html_opens_with_the_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "r.html"
    _report(tmp_path, capsys, "--report", str(page))
    text = page.read_text()
    verdict = text.index('id="verdict"')
    assert verdict < text.index('id="totals"')
    assert "<code>torch.backends.cuda.matmul.allow_tf32 = True</code>" in text


def test_analysis_verdict_is_the_documents() -> None:
    import solar

    analysis = solar.analyze(str(MLP), targets=("h100", "b200"))
    assert analysis.verdict == analysis.to_json()["verdict"]
    assert [s for s in analysis.verdict if s.startswith("On ")] == [
        s for s in analysis.verdict if s.startswith("On h100-sxm,") or s.startswith("On b200,")]
    assert 'id="verdict"' in analysis.to_html()


def test_headroom_sentence_from_a_measurement() -> None:
    import solar
    from solar.backends.sol_verdict import sentences

    analysis = solar.analyze(str(MLP), targets=("h100",))
    doc = analysis.to_json()
    fused = doc["targets"][0]["modes"]["fused"]["time_s"]
    measured = {"measurements": {"eager": {"median_s": 10 * fused}},
                "headroom": {"h100-sxm": {"eager": {"fused": {"median": 10.0, "min": 9.0}}}}}
    said = sentences(doc, measured)
    assert any(s.startswith("Measured eager: ") and "10× the fused SOL" in s for s in said)


def test_notebook_view_is_one_scoped_root() -> None:
    import re

    import solar

    fragment = solar.analyze(str(MLP), targets=("h100",))._repr_html_()
    assert "<body" not in fragment and "<html" not in fragment
    css = re.search(r"<style>(.*?)</style>", fragment, re.S).group(1)
    selectors = [sel.strip() for rule in re.findall(r"([^{}]+)\{", css) for sel in rule.split(",")]
    assert selectors and all(sel.startswith(".solar-report") for sel in selectors), selectors
    # One root element, its styles inside it: nothing of the notebook's page sits beside it.
    assert fragment.startswith('<div class="solar-report"><style>') and fragment.endswith("</div>")
    assert fragment.count('<div class="solar-report">') == 1
