"""The litellm wrapper: preflight errors, retries with backoff, the disk cache, the size limit, transcripts.
Offline: replies come from litellm's `mock_response` (through ReplayProvider), and sockets are blocked."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no cost-map download

import pytest

pytest.importorskip("litellm")

from solar.frontends.llm.client import (
    Completion,
    LLMClient,
    LLMConfig,
    LLMError,
    ReplayProvider,
    Transcript,
    Usage,
)

MODEL = "openai/gpt-4o-mini"
MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "translate"}]


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a test tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def client(tmp_path: Path, events: list[dict[str, Any]],
           **config: Any) -> tuple[LLMClient, ReplayProvider, list[float]]:
    replay = ReplayProvider(events)
    sleeps: list[float] = []
    cfg = LLMConfig(MODEL, cache_dir=str(tmp_path / "cache"), **config)
    return LLMClient(cfg, completion_fn=replay, sleep=sleeps.append), replay, sleeps


def test_reply_with_tokens_and_cost(tmp_path: Path) -> None:
    c, replay, _ = client(tmp_path, [{"response": "```sir\nsolar.func @f() {}\n```"}])
    out = c.complete(MESSAGES)
    assert out.text.startswith("```sir") and not out.cached
    assert out.prompt_tokens > 0 and out.completion_tokens > 0
    assert out.cost is not None and out.cost > 0  # priced from litellm's local table
    assert replay.requests == [MESSAGES]
    assert c.usage.calls == 1 and c.usage.cost == out.cost


def test_provider_errors_are_retried_with_backoff(tmp_path: Path) -> None:
    events = [{"error": "RateLimitError: slow down"}, {"error": "APIConnectionError: reset by peer"},
              {"error": "InternalServerError: 503"}, {"response": "done"}]
    c, replay, sleeps = client(tmp_path, events, backoff=1.5)
    assert c.complete(MESSAGES).text == "done"
    assert len(replay.requests) == 4
    assert sleeps == [1.5, 3.0, 6.0]  # exponential backoff
    assert c.usage.retries == 3


def test_retries_run_out(tmp_path: Path) -> None:
    c, _, sleeps = client(tmp_path, [{"error": "RateLimitError: slow down"}] * 3, retries=2)
    with pytest.raises(LLMError, match=r"failed 3 times; last: RateLimitError: slow down"):
        c.complete(MESSAGES)
    assert len(sleeps) == 2


def test_errors_a_retry_cannot_fix_fail_at_once(tmp_path: Path) -> None:
    c, replay, sleeps = client(tmp_path, [{"error": "AuthenticationError: Incorrect API key provided"},
                                          {"response": "never asked"}])
    with pytest.raises(LLMError) as info:
        c.complete(MESSAGES)
    assert "Incorrect API key" in str(info.value) and "\n" not in str(info.value)
    assert len(replay.requests) == 1 and sleeps == []


def test_empty_reply_is_retried(tmp_path: Path) -> None:
    c, replay, _ = client(tmp_path, [{"response": ""}, {"response": "ok"}])
    assert c.complete(MESSAGES).text == "ok"
    assert len(replay.requests) == 2


def test_cache_makes_a_rerun_free(tmp_path: Path) -> None:
    first, _, _ = client(tmp_path, [{"response": "the answer"}])
    assert first.complete(MESSAGES).text == "the answer"
    again, replay, _ = client(tmp_path, [])  # no recorded reply: any provider call would fail the test
    out = again.complete(MESSAGES)
    assert out.text == "the answer" and out.cached and out.cost == 0.0
    assert replay.requests == []
    assert again.usage.cached == 1 and again.usage.cost == 0.0 and again.usage.prompt_tokens == 0
    # Another prompt, model or temperature is another key.
    other, replay2, _ = client(tmp_path, [{"response": "warmer"}], temperature=0.7)
    assert other.complete(MESSAGES).text == "warmer" and len(replay2.requests) == 1


def test_cache_location_follows_solar_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOLAR_CACHE_DIR", str(tmp_path / "root"))
    c = LLMClient(LLMConfig(MODEL), completion_fn=ReplayProvider([{"response": "x"}]))
    c.complete(MESSAGES)
    assert list((tmp_path / "root" / "llm").rglob("*.json"))


def test_damaged_cache_entry_is_asked_again(tmp_path: Path) -> None:
    first, _, _ = client(tmp_path, [{"response": "one"}])
    first.complete(MESSAGES)
    for path in (tmp_path / "cache").rglob("*.json"):
        path.write_text("{not json", encoding="utf-8")
    again, replay, _ = client(tmp_path, [{"response": "two"}])
    assert again.complete(MESSAGES).text == "two" and len(replay.requests) == 1


def test_size_limit_cuts_the_reply(tmp_path: Path) -> None:
    c, _, _ = client(tmp_path, [{"response": "x" * 500}], max_response_chars=100)
    out = c.complete(MESSAGES)
    assert out.truncated and len(out.text) == 100 and out.length == 500


def test_transcript_records_requests_replies_and_errors(tmp_path: Path) -> None:
    t = Transcript(tmp_path / "t")
    replay = ReplayProvider([{"error": "RateLimitError: slow down"}, {"response": "```sir\nx\n```"}])
    c = LLMClient(LLMConfig(MODEL, use_cache=False), completion_fn=replay, sleep=lambda s: None, transcript=t)
    c.complete(MESSAGES)
    t.check(1, "parse", "response.sir:1:1: error: nope")
    files = sorted(p.name for p in (tmp_path / "t").iterdir())
    assert files == ["01-check.txt", "01-request.md", "01-response.md", "transcript.jsonl"]
    assert "## user\n\ntranslate" in (tmp_path / "t" / "01-request.md").read_text(encoding="utf-8")
    events = [json.loads(x) for x in (tmp_path / "t" / "transcript.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [e.get("error", e.get("response", e.get("diagnostic"))) for e in events] == [
        "RateLimitError: slow down", "```sir\nx\n```", "response.sir:1:1: error: nope"]
    # A transcript replays: the same format is what tests/unit/data/llm/ holds.
    again = ReplayProvider(tmp_path / "t" / "transcript.jsonl")
    assert len(again.events) == 2


def test_usage_sums_and_unknown_cost() -> None:
    u = Usage()
    u.add(Completion("a", 10, 5, 0.5))
    u.add(Completion("b", 3, 2, None))
    u.add(Completion("c", 7, 7, 0.0, cached=True))
    assert (u.calls, u.cached, u.prompt_tokens, u.completion_tokens, u.cost, u.cost_known) == (3, 1, 13, 7, 0.5, False)


# ---- preflight: fail at once, in one line --------------------------------------------------------------


def test_preflight_without_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMError) as info:
        LLMClient(LLMConfig(MODEL)).preflight()
    msg = str(info.value)
    assert "no API key" in msg and "OPENAI_API_KEY" in msg and "\n" not in msg


def test_preflight_unknown_model() -> None:
    with pytest.raises(LLMError) as info:
        LLMClient(LLMConfig("no-such-model-xyz")).preflight()
    assert "unknown model 'no-such-model-xyz'" in str(info.value) and "\n" not in str(info.value)


def test_preflight_passes_with_key_or_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    LLMClient(LLMConfig(MODEL)).preflight()
    monkeypatch.delenv("OPENAI_API_KEY")
    # A local server: no key is needed (whether it wants one is its business).
    LLMClient(LLMConfig("openai/local-model", base_url="http://localhost:8000/v1")).preflight()
    LLMClient(LLMConfig("ollama/llama3")).preflight()  # defaults to localhost, needs no key
