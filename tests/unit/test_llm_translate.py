"""The LLM frontend end to end, offline: recorded transcripts (tests/unit/data/llm/*.jsonl) replayed through
litellm's `mock_response`. Each case checks the outcome and that the prompts carry the exact diagnostics.

The program (data/llm/topk_model.py) is a linear layer, a ReLU and torch.topk. The lowering table covers topk
for k ≤ 8 now; the recordings translate it by the model, so each test runs with that entry removed
(`without_topk_lowering`): hybrid mode then asks only for topk; --llm-only for the whole module."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no cost-map download

import pytest

pytest.importorskip("torch")
pytest.importorskip("litellm")

import litellm

from solar.frontends import torch_export as te
from solar.frontends.llm import LLMClient, LLMConfig, LLMOptions, LoopFailed, ReplayProvider, translate_torch
from solar.frontends.llm import client as client_mod
from solar.ir import parse_and_verify
from solar.tools.solar_translate import main

DATA = Path(__file__).resolve().parent / "data" / "llm"
PROGRAM = DATA / "topk_model.py"
MODEL = "openai/gpt-4o-mini"
CORPUS = Path(__file__).resolve().parents[1] / "frontend_corpus"


@pytest.fixture(autouse=True)
def without_topk_lowering(monkeypatch: pytest.MonkeyPatch) -> None:
    """The recorded replies write torch.topk's IR: keep it an op the deterministic frontend leaves open."""
    from solar.frontends.lowering import TORCH_LOWERINGS

    monkeypatch.delitem(TORCH_LOWERINGS, "aten::topk")


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No socket may connect; a fake key passes the preflight; the reply cache is per test."""
    real_connect = socket.socket.connect

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a test tried to reach the network")

    def connect(self: socket.socket, address: Any) -> None:
        # Local (AF_UNIX) sockets are no network: the process that runs a candidate IR under its
        # wall-clock limit is reached through one.
        if self.family == socket.AF_UNIX:
            return real_connect(self, address)
        refuse()

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    monkeypatch.setattr(client_mod, "default_cache_dir", lambda: tmp_path / "llm-cache")


def translate(recording: str | list[dict[str, Any]], llm_only: bool = False, max_attempts: int = 4,
              program: Path = PROGRAM, validate_timeout: float = 0.0, **config: Any
              ) -> tuple[Any, ReplayProvider, LLMClient]:
    replay = ReplayProvider(DATA / recording if isinstance(recording, str) else recording)
    client = LLMClient(LLMConfig(MODEL, use_cache=False, **config), completion_fn=replay, sleep=lambda s: None)
    problem = te.load_problem(str(program))
    opts = LLMOptions(MODEL, llm_only=llm_only, max_attempts=max_attempts, validate_timeout=validate_timeout)
    out = translate_torch(problem, program.read_text(encoding="utf-8"), program.name, opts, client=client)
    return out, replay, client


def feedback(replay: ReplayProvider, request: int) -> str:
    """The last user message of request `request` (0-based): the diagnostic of the attempt before it."""
    msg = replay.requests[request][-1]
    assert msg["role"] == "user"
    return msg["content"]


def test_hybrid_success_at_once() -> None:
    out, replay, _ = translate("hybrid_ok.jsonl")
    assert out.mode == "hybrid" and out.attempts == 1 and out.ops == ["aten.topk.default"]
    assert out.report.ok
    first = replay.requests[0]
    assert first[0]["role"] == "system" and "# SIR: the SOLAR intermediate representation" in first[0]["content"]
    task = first[1]["content"]
    # The model sees the source, the module with the hole left to write, and the fixed signature.
    assert "torch.topk(h, 2, dim=1)" in task
    assert "solar.call @llm_topk(%relu) : tensor<BATCHx2xf32>" in task and "// TO WRITE" in task
    assert "aten.topk.default(self=%relu, k=2, dim=1, largest=True, sorted=True)" in task
    assert "solar.func @llm_topk(%self: tensor<BATCHx8xf32>) -> tensor<BATCHx2xf32>" in task
    assert "loc(" not in task  # no absolute paths: the prompt (and the cache key) is the same anywhere
    m = out.module
    written = m.lookup("llm_topk")
    assert written is not None and written.attrs == {"origin": "llm", "op": "aten.topk.default"}
    assert m.lookup("linear") is None and m.funcs[0].name == "forward"  # the rest is deterministic
    llm = m.attrs["llm"]
    assert (llm["model"], llm["mode"], llm["attempts"], llm["ops"]) == (MODEL, "hybrid", 1, ["aten.topk.default"])
    assert llm["prompt_tokens"] > 0 and llm["completion_tokens"] > 0 and llm["cost_usd"] > 0


def test_parse_error_then_fix() -> None:
    out, replay, _ = translate("hybrid_parse_fix.jsonl")
    assert out.attempts == 2 and out.report.ok
    fb = feedback(replay, 1)
    assert "Attempt 1 was rejected (parse)" in fb
    # The parser's diagnostic, in the reply's own line numbers, with the line and a caret.
    assert "response.sir:8:15: error: expected ',' or ']', found 'max'\n        m1[%i max= X[%i, %j]\n" \
           "              ^" in fb
    # The conversation keeps the rejected reply before the feedback.
    assert replay.requests[1][-2]["role"] == "assistant" and "m1[%i max=" in replay.requests[1][-2]["content"]


def test_verifier_error_then_fix() -> None:
    out, replay, _ = translate("whole_verify_fix.jsonl", llm_only=True)
    assert out.mode == "whole" and out.attempts == 2 and out.report.ok
    fb = feedback(replay, 1)
    assert "Attempt 1 was rejected (verify)" in fb
    assert "response.sir:6:23: error: unknown tensor Bais; did you mean 'Bias'?" in fb


def test_numerical_mismatch_then_fix() -> None:
    out, replay, _ = translate("hybrid_mismatch_fix.jsonl")
    assert out.attempts == 2 and out.report.ok
    fb = feedback(replay, 1)
    assert "Attempt 1 was rejected (compare)" in fb
    assert "error: output 0 of the program (f32[2, 2]) differs beyond rtol=0.0002, atol=1e-05 in" in fb
    assert "the largest difference is at [" in fb and "the IR gives" in fb and "the original" in fb
    assert "at BATCH=2, seed 0" in fb


def test_interface_error_then_fix() -> None:
    good = (DATA / "hybrid_ok.jsonl").read_text(encoding="utf-8").splitlines()[1]
    reply = json.loads(good)["response"]
    # Consistent in itself (it verifies), but not what the call site passes.
    wrong = reply.replace("@llm_topk(%self: tensor<BATCHx8xf32>)",
                          "@llm_topk(%self: tensor<BATCHx8xf32>, %k: tensor<i64>)")
    out, replay, _ = translate([{"response": wrong}, {"response": reply}])
    assert out.attempts == 2
    fb = feedback(replay, 1)
    assert "rejected (interface)" in fb
    assert "response.sir:1:1: error: @llm_topk takes 2 argument(s), it must take 1" in fb


def test_oversized_reply_is_rejected_with_a_diagnostic() -> None:
    events = [{"response": "```sir\n" + "// padding\n" * 50 + "```"}]
    with pytest.raises(LoopFailed) as info:
        translate(events, max_attempts=1, max_response_chars=200)
    assert info.value.last.stage == "size"
    assert "over the limit of 200" in info.value.last.diagnostic


def test_attempts_exhausted_carries_the_last_diagnostic() -> None:
    with pytest.raises(LoopFailed) as info:
        translate("hybrid_exhausted.jsonl", max_attempts=2)
    err = info.value
    assert [a.stage for a in err.attempts] == ["extract", "extract"]
    assert "after 2 attempt(s)" in str(err) and "has no ```sir block (it has ```python)" in str(err)


def test_provider_error_then_retry() -> None:
    out, replay, client = translate("hybrid_provider_retry.jsonl")
    assert out.attempts == 1 and out.report.ok
    assert len(replay.requests) == 3 and client.usage.retries == 2
    assert replay.requests[0] == replay.requests[2]  # the same request, retried


FMOD = """```sir
solar.func @llm_fmod(%self: tensor<BATCHx6xi64>, %other: tensor<BATCHx6xi64>) -> tensor<BATCHx6xi64> {
  %r = solar.kernel @fmod(%self as X, %other as Y) -> (R: tensor<BATCHx6xi64>) {
    affine.for %i = 0 to BATCH {
      affine.for %j = 0 to 6 {
        R[%i, %j] = select(X[%i, %j] mod Y[%i, %j] != 0 and (X[%i, %j] < 0) != (Y[%i, %j] < 0), \
X[%i, %j] mod Y[%i, %j] - Y[%i, %j], X[%i, %j] mod Y[%i, %j])
      }
    }
  }
  solar.return %r
}
```"""


def test_configuration_the_lowering_rejects_becomes_a_hole() -> None:
    """Integer fmod has a lowering that rejects it: the model writes that op, nothing of the rejected attempt
    stays in the module, and the integers must match exactly."""
    out, replay, _ = translate([{"response": FMOD}], program=DATA / "int_fmod_model.py")
    assert out.ops == ["aten.fmod.Tensor"] and out.report.ok
    task = replay.requests[0][1]["content"]
    assert "aten.fmod.Tensor(self=%x, other=%y)" in task and "integer fmod is not supported" in task
    kernels = [op.symbol for op in out.module.funcs[0].walk() if op.opname == "solar.kernel"]
    assert kernels == ["mul"]


BRANCHY = """```sir
solar.module @branchy_model {
  solar.func @forward(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
    %c = solar.kernel @positive(%x as X) -> (C: tensor<i1>) {
      local s: tensor<f32>
      affine.for %i = 0 to 3 {
        affine.for %j = 0 to 4 {
          s[] += X[%i, %j]
        }
      }
      C[] = s[] > 0.0
    }
    %y = solar.if %c -> tensor<3x4xf32> {
      %a = solar.kernel @double(%x as X) -> (Y: tensor<3x4xf32>) {
        affine.for %i = 0 to 3 {
          affine.for %j = 0 to 4 {
            Y[%i, %j] = X[%i, %j] * 2.0
          }
        }
      }
      solar.yield %a
    } else {
      %b = solar.kernel @dec(%x as X) -> (Y: tensor<3x4xf32>) {
        affine.for %i = 0 to 3 {
          affine.for %j = 0 to 4 {
            Y[%i, %j] = X[%i, %j] - 1.0
          }
        }
      }
      solar.yield %b
    }
    solar.return %y
  }
}
```"""


def test_export_failure_falls_back_to_the_whole_program() -> None:
    out, replay, _ = translate([{"response": BRANCHY}], program=DATA / "branchy_model.py")
    assert out.mode == "whole" and out.report.ok
    assert "could not lower the program" in out.module.attrs["llm"]["note"]
    task = replay.requests[0][1]["content"]
    # The interface from an eager run: static shapes, the forward's own argument names.
    assert "solar.func @forward(%x: tensor<3x4xf32>) -> tensor<3x4xf32>" in task and "%x = input 0" in task


def test_covered_program_makes_no_request() -> None:
    replay = ReplayProvider([])  # any request would fail the test
    client = LLMClient(LLMConfig(MODEL, use_cache=False), completion_fn=replay)
    path = CORPUS / "torch" / "mm_linear_relu.py"
    out = translate_torch(te.load_problem(str(path)), path.read_text(encoding="utf-8"), path.name,
                          LLMOptions(MODEL), client=client)
    assert out.attempts == 0 and out.report.ok and replay.requests == []
    assert out.module.attrs["llm"]["attempts"] == 0


# ---- the command line ---------------------------------------------------------------------------------


def install(monkeypatch: pytest.MonkeyPatch, recording: str | list[dict[str, Any]]) -> ReplayProvider:
    replay = ReplayProvider(DATA / recording if isinstance(recording, str) else recording)
    monkeypatch.setattr(litellm, "completion", replay)
    return replay


def test_cli_writes_a_validated_module_with_model_attempts_tokens_and_cost(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, "whole_ok.jsonl")
    out = tmp_path / "m.sir"
    assert main([str(PROGRAM), "--llm", MODEL, "--llm-only", "-o", str(out), "--transcript",
                 str(tmp_path / "t"), "--validate-size", "2"]) == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("// Translated by solar-translate from ")
    assert f"(whole program by {MODEL}, torch " in text
    assert f"// Model: {MODEL} (whole program: the model wrote all of it); attempts 1 of 4\n" in text
    assert "//   tokens 10 prompt + 20 completion; $" in text
    assert "// Validation: passed; seed 0; sizes BATCH=2" in text
    module = parse_and_verify(text, str(out))
    assert module.attrs["origin"] == "llm" and module.attrs["validation"]["status"] == "passed"
    assert module.attrs["llm"]["attempts"] == 1 and module.attrs["llm"]["completion_tokens"] == 20
    assert [(p.name, p.default) for p in module.params] == [("BATCH", 4)]
    files = sorted(p.name for p in (tmp_path / "t").iterdir())
    assert files == ["01-check.txt", "01-request.md", "01-response.md", "transcript.jsonl"]


def test_cli_rerun_is_served_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    install(monkeypatch, "hybrid_mismatch_fix.jsonl")
    assert main([str(PROGRAM), "--llm", MODEL]) == 0
    first = capsys.readouterr().out
    assert "attempts 2 of 4" in first and "0 cached response(s)" in first
    replay = install(monkeypatch, [])  # nothing recorded: a request would fail
    assert main([str(PROGRAM), "--llm", MODEL]) == 0
    again = capsys.readouterr().out
    assert replay.requests == []
    assert "tokens 0 prompt + 0 completion; $0.0000; 2 cached response(s)" in again
    assert "cost_usd = 0.0" in again


def test_cli_attempts_exhausted_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    replay = install(monkeypatch, "hybrid_exhausted.jsonl")
    out = tmp_path / "m.sir"
    assert main([str(PROGRAM), "--llm", MODEL, "--max-attempts", "2", "-o", str(out)]) == 1
    assert not out.exists()
    err = capsys.readouterr().err
    assert err.startswith(f"solar-translate: error: no valid translation from {MODEL} after 2 attempt(s)")
    assert "(it has ```python)" in err
    assert "is not SIR (it begins: 'I am sorry" in feedback(replay, 1)


def test_cli_without_key_fails_at_once_in_one_line(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    replay = install(monkeypatch, [])
    assert main([str(PROGRAM), "--llm", MODEL]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("solar-translate: error: no API key for 'openai/gpt-4o-mini'")
    assert replay.requests == []


def test_cli_unknown_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(PROGRAM), "--llm", "no-such-model"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown model 'no-such-model'" in err


@pytest.mark.parametrize(("argv", "says"), [
    (["--llm-only"], "--llm-only needs --llm MODEL"),
    (["--llm", MODEL, "--no-validate"], "--llm always validates"),
    (["--llm", MODEL, "--framework", "jax"], "--llm translates PyTorch programs only"),
    (["--llm", MODEL, "--max-attempts", "0"], "--max-attempts must be at least 1"),
])
def test_cli_usage_errors(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(PROGRAM), *argv]) == 1
    assert says in capsys.readouterr().err
