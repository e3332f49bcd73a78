"""The language-model loop against hostile or broken answers (issue 14, finding 8): the work check counts
solar.for trips, a run has a wall-clock limit, an oversized reply is not resent, an HTML answer is one
configuration error, empty replies are in the transcript, error prefixes are not doubled. Offline: replies come
from ReplayProvider (litellm's mock_response) or from a scripted HTTP server on 127.0.0.1."""

from __future__ import annotations

import http.server
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no cost-map download

import numpy as np
import pytest

pytest.importorskip("litellm")

from solar.frontends.llm.client import LLMClient, LLMConfig, LLMError, ReplayProvider, Transcript, _one_line
from solar.frontends.llm.loop import CandidateError, Golden, check_outputs, check_work, run_loop
from solar.ir import parse_and_verify

MODEL = "openai/gpt-4o-mini"
MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "translate"}]

WRAPPED = """solar.module @m [N = 4] {
  solar.func @f(%x: tensor<Nxf32>) -> tensor<Nxf32> {
    %r = solar.for %t = 0 to 1000000000000 iter_args(%h = %x) -> (tensor<Nxf32>) {
      %y = solar.kernel @step(%h as H) -> (Y: tensor<Nxf32>) {
        affine.for %i = 0 to N {
          Y[%i] = H[%i] + 1.0
        }
      }
      solar.yield %y
    }
    solar.return %r
  }
}
"""

SPIN = """solar.func @f(%x: tensor<4xf32>) -> tensor<f32> {
  %s = solar.kernel @spin(%x as X) -> (S: tensor<f32>) {
    affine.for %i = 0 to 4 {
      affine.for %j = 0 to 49000 {
        affine.for %k = 0 to 49000 {
          S[] += sqrt(X[%i] + cast<f32>(%k)) / (X[%i] + cast<f32>(%j))
        }
      }
    }
  }
  solar.return %s
}
"""


def test_work_check_multiplies_solar_for_trips() -> None:
    module = parse_and_verify(WRAPPED)
    with pytest.raises(CandidateError) as info:
        check_work(module, {"N": 2})
    assert info.value.stage == "run"
    assert info.value.diagnostic == (
        "error: kernel @step iterates about 2e+12 points (1e+12 runs inside solar.for loops) at the validation "
        "sizes (N=2), over the limit of 1e+10; loop bounds and trip counts must follow the tensor shapes\n")
    check_work(module, {"N": 2}, limit=10**13)  # the same module under a larger limit passes


def test_work_check_sums_over_kernels() -> None:
    module = parse_and_verify(WRAPPED.replace("1000000000000", "3"))
    check_work(module, {"N": 2}, limit=6)
    with pytest.raises(CandidateError, match=r"@step iterates about 6 points \(3 runs"):
        check_work(module, {"N": 2}, limit=5)


def test_validation_run_has_a_wall_clock_limit() -> None:
    # 9.6e9 points: under the work limit; a square root and a division each, so seconds even vectorised
    module = parse_and_verify(SPIN)
    check_work(module, {})
    golden = Golden([np.ones(4, np.float32)], [np.zeros((), np.float32)], {}, 0)
    with pytest.raises(CandidateError) as info:
        check_outputs(module, golden, seconds=1.0)
    assert info.value.stage == "run"
    assert "took more than 1 s, the limit (--validate-timeout)" in info.value.diagnostic


def test_limited_run_gives_the_same_outputs_as_in_process() -> None:
    module = parse_and_verify(WRAPPED.replace("1000000000000", "3"))
    x = np.arange(4, dtype=np.float32)
    golden = Golden([x], [x + 3], {}, 0)
    report = check_outputs(module, golden, seconds=120.0)
    assert report.ok and report.max_abs_error == 0.0
    with pytest.raises(CandidateError) as info:
        check_outputs(module, Golden([x], [x + 4], {}, 0), seconds=120.0)
    assert info.value.stage == "compare"


def test_oversized_reply_is_not_resent(tmp_path: Path) -> None:
    huge = "```sir\n" + "x" * 300_000 + "\n```"
    replay = ReplayProvider([{"response": huge}, {"response": "fine"}])
    client = LLMClient(LLMConfig(MODEL, use_cache=False), completion_fn=replay, sleep=lambda s: None)
    messages = [dict(m) for m in MESSAGES]

    def check(text: str, attempt: int) -> str:
        if text != "fine":
            raise CandidateError("parse", "error: not SIR")
        return text

    outcome = run_loop(client, messages, check, max_attempts=2, what="the module")
    assert outcome.result == "fine" and outcome.attempts == 2
    second = replay.requests[1]
    resent = second[2]
    assert resent["role"] == "assistant"
    assert resent["content"].startswith("[my answer here was 300011 characters long, over the limit of 200000, "
                                        "and is not repeated; it began: ")
    assert len(resent["content"]) < 400
    assert sum(len(m["content"]) for m in second) < 5_000


def test_empty_reply_is_recorded_in_the_transcript(tmp_path: Path) -> None:
    transcript = Transcript(tmp_path / "t")
    replay = ReplayProvider([{"response": ""}, {"response": "ok"}])
    client = LLMClient(LLMConfig(MODEL, use_cache=False), completion_fn=replay, sleep=lambda s: None,
                       transcript=transcript)
    assert client.complete(MESSAGES).text == "ok"
    events = [json.loads(line) for line in (tmp_path / "t" / "transcript.jsonl").read_text().splitlines()]
    assert [(e.get("response"), e.get("note")) for e in events] == [
        ("", "the provider returned an empty reply"), ("ok", None)]
    # Replayed, the recorded transcript asks twice again: the empty reply stays an empty reply.
    again = ReplayProvider(tmp_path / "t" / "transcript.jsonl")
    LLMClient(LLMConfig(MODEL, use_cache=False), completion_fn=again, sleep=lambda s: None).complete(MESSAGES)
    assert len(again.requests) == 2


def test_error_prefixes_are_not_doubled(tmp_path: Path) -> None:
    assert _one_line("litellm.InternalServerError: InternalServerError: OpenAIException - down") == \
        "OpenAIException - down"
    replay = ReplayProvider([{"error": "InternalServerError: InternalServerError: OpenAIException - down"}] * 2)
    client = LLMClient(LLMConfig(MODEL, use_cache=False, retries=1), completion_fn=replay, sleep=lambda s: None)
    with pytest.raises(LLMError) as info:
        client.complete(MESSAGES)
    message = str(info.value)
    assert message.endswith("failed 2 times; last: InternalServerError: OpenAIException - down")
    assert "InternalServerError: InternalServerError" not in message


# ---- a scripted server on 127.0.0.1 ------------------------------------------------------------------------


class _Scripted(http.server.BaseHTTPRequestHandler):
    body = b""
    content_type = "text/html"
    status = 200
    hits = 0

    def do_POST(self) -> None:
        type(self).hits += 1
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(self.status)
        self.send_header("Content-Type", self.content_type)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, type[_Scripted]]]:
    handler = type("Handler", (_Scripted,), {"hits": 0})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_port}/v1", handler
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.mark.parametrize("body", [
    b"<!DOCTYPE html><html><head><title>Sign in - Corporate Proxy</title></head><body>login</body></html>",
    b"hello, this is not an API",
])
def test_html_or_text_answer_is_one_configuration_error(server: tuple[str, type[_Scripted]], body: bytes,
                                                        tmp_path: Path) -> None:
    url, handler = server
    handler.body = body
    sleeps: list[float] = []
    client = LLMClient(LLMConfig("openai/some-model", base_url=url, use_cache=False, timeout=20),
                       sleep=sleeps.append)
    os.environ.setdefault("OPENAI_API_KEY", "sk-test-not-a-key")
    with pytest.raises(LLMError) as info:
        client.complete(MESSAGES)
    message = str(info.value)
    assert handler.hits == 1 and sleeps == []  # asked once, never retried
    assert f"the server at {url} did not answer with the API's JSON" in message
    assert "a configuration problem, not retried" in message and "\n" not in message
    if body.startswith(b"<!DOCTYPE"):
        assert message.endswith("It said: an HTML page titled 'Sign in - Corporate Proxy'")


def test_a_scalar_output_that_differs_says_where() -> None:
    module = parse_and_verify(SPIN.replace("49000", "2").replace(
        "sqrt(X[%i] + cast<f32>(%k)) / (X[%i] + cast<f32>(%j))", "X[%i]"))  # S: 4 x 2 x 2 ones, 16
    golden = Golden([np.ones(4, np.float32)], [np.zeros((), np.float32)], {}, 0)
    with pytest.raises(CandidateError) as info:
        check_outputs(module, golden, seconds=60.0)
    assert "the largest difference is at []: the IR gives 16, the original 0" in info.value.diagnostic
