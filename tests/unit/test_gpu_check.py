"""benchmarks/gpu_check.py on the CPU: the GPU path with a stand-in CUDA device (test_bench's), the report
of its records, and the refusal without a GPU."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("torch")

from test_bench import DATA, _FakeCuda

ROOT = Path(__file__).resolve().parents[2]


def gpu_check() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "benchmarks" / "gpu_check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_check_on_a_stand_in_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("softmax.py", "matmul.py"):
        shutil.copy(DATA / name, corpus / name)
    _FakeCuda().install(monkeypatch)
    out = tmp_path / "records.jsonl"
    code = gpu_check().main(["--corpus", str(corpus), "--out", str(out), "--in-process", "--frameworks", "eager",
                             "--budget", "0.05"])
    text = capsys.readouterr().out
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["problem"] for r in records] == ["matmul.py", "softmax.py"]
    assert all(r["status"] == "ok" and r["device"]["kind"] == "cuda" for r in records)
    # The stand-in's 2 ms per run against the H100's bounds (the device name picks the target).
    for r in records:
        fused = r["headroom"]["h100-sxm"]["eager"]["fused"]["min"]
        assert fused == pytest.approx(0.002 / r["bounds"]["h100-sxm"]["fused"])
        assert f"{r['problem']:34s} NVIDIA H100 80GB HBM3: eager vs h100-sxm: fused {fused:.3g}x" in text
    assert code == (3 if any(r["violations"] for r in records) else 0)
    # On a busy machine solar-bench marks the records noisy and leaves them out of the headroom table.
    noisy = [r for r in records if r.get("noisy")]
    assert ("Headroom (measured median ÷ SOL)" in text) == (len(noisy) < len(records))
    assert all("(noisy: measured on a busy machine)" in text.split(r["problem"], 1)[1].split("\n", 1)[0]
               for r in noisy)
    assert "violations: 0 in 0 problem(s)" in text
    assert "gpu check: 2 problems in" in text
    # The report of the same records, read back.
    assert gpu_check().main(["--records", str(out)]) == 0
    assert "gpu check: 2 problems" in capsys.readouterr().out


def test_without_a_gpu_it_says_so(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu_check().main(["--out", "unused.jsonl"]) == 1
    assert "no CUDA device here" in capsys.readouterr().err


def test_the_command_is_solar_bench_on_the_corpus() -> None:
    module = gpu_check()
    args = type("Args", (), {"corpus": "c", "device": "cuda", "frameworks": "eager,compile", "budget": 0.5,
                             "timeout": 120.0, "out": "o.jsonl", "resume": False, "plot": "", "match": ["conv*"]})()
    assert module.bench_argv(args) == ["c", "--device", "cuda", "--frameworks", "eager,compile", "--budget", "0.5",
                                       "--timeout", "120.0", "--jobs", "1", "--out", "o.jsonl", "--no-progress",
                                       "--overwrite", "--match", "conv*"]
