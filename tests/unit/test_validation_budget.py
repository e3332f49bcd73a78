"""Validation does not run a program still too large at the smallest sizes it can take (BigBird at sequence
4,095, whose sequence cannot shrink, executes about 5.6e11 kernel statements): the IR is written, its header
and a remark say why it was not run, and --full-size-validation runs it anyway."""

from __future__ import annotations

from pathlib import Path

import pytest

from solar.frontends import scaled_reference

PROGRAM = """\
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 8)

    def forward(self, x):
        return torch.relu(self.fc(x))


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return []
"""


def _translate(tmp_path: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str, str]:
    from solar.tools.solar_translate import main as run

    source, out = tmp_path / "fc.py", tmp_path / "fc.sir"
    source.write_text(PROGRAM)
    code = run([str(source), "--dynamic", "none", "-o", str(out), *flags])
    return code, capsys.readouterr().err, out.read_text() if out.exists() else ""


def test_a_program_over_the_budget_is_written_unvalidated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # 4 x 8 outputs of 16 products each, then the bias and the ReLU: 512 + 32 + 32 statements.
    monkeypatch.setattr(scaled_reference, "VALIDATION_MAX_STATEMENTS", 500)
    code, err, sir = _translate(tmp_path, capsys)
    assert code == 0
    assert "solar-translate: remark: validation skipped: at the smallest sizes it can run, the IR's kernels " \
           "execute about 5.8e+02 statements, over validation's 5e+02" in err
    assert "// Validation: skipped;" in sir and 'status = "skipped"' in sir
    code, err, sir = _translate(tmp_path, capsys, "--full-size-validation")
    assert code == 0 and "remark" not in err and "// Validation: passed;" in sir


def test_under_the_budget_it_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert scaled_reference.VALIDATION_MAX_STATEMENTS == 5e10
    code, err, sir = _translate(tmp_path, capsys)
    assert code == 0 and "// Validation: passed;" in sir and "skipped" not in err


def test_one_prepared_program_serves_the_size_check_and_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The module is bound, verified and its kernels generated once: the twin's plan, the size check and
    the run share that program (BigBird's 3,000 kernels took 1.8 s per check)."""
    from solar.backends import executor

    prepared: list[object] = []
    generated: list[str] = []
    prepare, generate = executor.prepare, executor.generate_kernel
    monkeypatch.setattr(executor, "prepare", lambda *a, **k: prepared.append(a[1]) or prepare(*a, **k))
    monkeypatch.setattr(executor, "generate_kernel", lambda op, *a: generated.append(op.symbol) or generate(op, *a))
    code, _, sir = _translate(tmp_path, capsys)
    assert code == 0 and "// Validation: passed;" in sir
    assert prepared == [None]  # --dynamic none: no size to bind
    assert sorted(generated) == sorted(set(generated)) and len(generated) == sir.count("solar.kernel @")
