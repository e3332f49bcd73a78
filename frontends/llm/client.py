"""A small litellm wrapper: one chat completion at a time, with the guards an unattended loop needs.

    client = LLMClient(LLMConfig("openai/gpt-4o-mini"), transcript=Transcript("runs/t1"))
    client.preflight()                       # no key / unknown model: LLMError at once, before any work
    reply = client.complete(messages)        # Completion(text, tokens, cost, cached, truncated)

- *Any litellm model string*; keys and endpoints come from the environment (OPENAI_API_KEY, ...), or a base
  URL for a local server (`LLMConfig.base_url`, passed to litellm as `api_base`).
- *Retries*: rate limits, timeouts, dropped connections and 5xx answers are retried with exponential backoff;
  errors that a retry cannot fix (a bad key, an unknown model, a malformed request) raise `LLMError` at once.
- *Size limit*: the request caps `max_tokens`, and a reply longer than `max_response_chars` is cut there and
  flagged `truncated`, so that a runaway answer never reaches the parser whole.
- *Cache*: replies are stored on disk keyed by (model, base URL, temperature, token cap, messages), under
  `$SOLAR_CACHE_DIR/llm` (default `~/.cache/solar/llm`); a rerun with the same prompts costs nothing.
- *Transcript*: every request and reply (and every check the loop makes) is written to a directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# litellm fetches its model cost map from the network at import unless told not to; SOLAR never reaches the
# network except for the completion it was asked to make. Set before any import of litellm.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

Message = dict[str, str]
CompletionFn = Callable[..., Any]

# Credentials litellm reports missing that we treat as fatal; a missing *_API_BASE alone is not (ollama and
# friends default to localhost).
_CREDENTIAL = re.compile(r"KEY|TOKEN|SECRET|CREDENTIAL|PASSWORD", re.I)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class LLMError(Exception):
    """A provider problem that retrying will not fix (or retries ran out); the message is one line."""


@dataclass(frozen=True)
class LLMConfig:
    model: str
    temperature: float = 0.0
    timeout: float = 300.0  # seconds per request
    base_url: str | None = None
    max_tokens: int = 16384  # cap on the reply asked of the provider
    max_response_chars: int = 200_000  # replies are cut here (a SIR module of a large model is ~50 kB)
    retries: int = 4  # provider errors retried this many times
    backoff: float = 2.0  # first wait in seconds, doubled each retry
    max_backoff: float = 60.0
    cache_dir: str | None = None  # None: $SOLAR_CACHE_DIR/llm or ~/.cache/solar/llm
    use_cache: bool = True


@dataclass
class Completion:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0  # USD spent on this call (0 for a cache hit; None when litellm has no price)
    cached: bool = False
    truncated: bool = False  # cut at max_response_chars
    length: int = 0  # the reply's length before any cut


@dataclass
class Usage:
    """What a translation spent, summed over its calls (cache hits cost nothing and count no tokens)."""

    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    cost_known: bool = True
    retries: int = 0

    def add(self, c: Completion) -> None:
        self.calls += 1
        if c.cached:
            self.cached += 1
            return
        self.prompt_tokens += c.prompt_tokens
        self.completion_tokens += c.completion_tokens
        if c.cost is None:
            self.cost_known = False
        else:
            self.cost += c.cost


def default_cache_dir() -> Path:
    root = os.environ.get("SOLAR_CACHE_DIR")
    return Path(root) / "llm" if root else Path.home() / ".cache" / "solar" / "llm"


def _one_line(text: str) -> str:
    text = _ANSI.sub("", text).strip()
    # litellm prefixes "litellm.AuthenticationError: AuthenticationError: OpenAIException - ..."; keep the gist.
    # Repeatedly: litellm often names the class twice ("litellm.InternalServerError: InternalServerError: ...").
    prefix = re.compile(r"^(litellm\.)?\w+(Error|Exception):\s*")
    while prefix.match(text):
        text = prefix.sub("", text, count=1)
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first[:300]


def _litellm() -> Any:
    """litellm, imported on first use (it takes a second or two) with its import-time warnings silenced:
    pydantic warns about litellm's own types, which says nothing to a SOLAR user."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import litellm

    litellm.suppress_debug_info = True  # otherwise litellm prints provider lists and banners on errors
    return litellm


_NOT_JSON = re.compile(r"<!doctype|<html|Empty or invalid response from LLM endpoint|JSONDecodeError|"
                       r"Expecting value: line \d+ column \d+", re.I)


def _not_an_api_answer(err: BaseException) -> bool:
    """The server answered, but not with the API's JSON (an HTML error page of a proxy, a web server at the
    base URL): a configuration problem that no retry fixes."""
    return bool(_NOT_JSON.search(str(err)))


def _retryable(err: BaseException) -> bool:
    """Rate limits, timeouts, lost connections and server-side failures are worth another try."""
    litellm = _litellm()

    if isinstance(err, litellm.exceptions.APIConnectionError | litellm.exceptions.RateLimitError |
                  litellm.exceptions.InternalServerError | litellm.exceptions.ServiceUnavailableError |
                  litellm.exceptions.BadGatewayError | ConnectionError | TimeoutError):
        return True
    status = getattr(err, "status_code", None)
    if isinstance(status, int):
        return status in (408, 409, 429) or status >= 500
    # A bare APIError without a status is how litellm reports a garbled stream or an empty reply.
    return type(err) is litellm.exceptions.APIError


class Transcript:
    """Writes every request, reply and check of a translation to `directory`: `NN-request.md` and
    `NN-response.md` per call for reading, and `transcript.jsonl` (one JSON object per event) for tools:
    the recorded test transcripts under tests/unit/data/llm/ use the same format (`ReplayProvider`)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.calls = 0
        # A rerun into the same directory starts afresh: files of a longer earlier run would mislead.
        for old in self.dir.glob("[0-9][0-9]-*"):
            if re.fullmatch(r"\d\d-(request\.md|response\.md|check\.txt)", old.name):
                old.unlink()
        self._log = self.dir / "transcript.jsonl"
        self._log.write_text("", encoding="utf-8")

    def _append(self, event: dict[str, Any]) -> None:
        with self._log.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(event) + "\n")

    def request(self, model: str, messages: Sequence[Message]) -> int:
        self.calls += 1
        parts = [f"<!-- model: {model} -->\n"]
        parts += [f"## {m['role']}\n\n{m['content']}\n\n" for m in messages]
        (self.dir / f"{self.calls:02d}-request.md").write_text("".join(parts), encoding="utf-8")
        return self.calls

    def response(self, call: int, model: str, messages: Sequence[Message], completion: Completion | None,
                 error: str | None = None, note: str | None = None) -> None:
        event: dict[str, Any] = {"event": "call", "call": call, "model": model, "messages": list(messages)}
        if completion is not None:
            (self.dir / f"{call:02d}-response.md").write_text(completion.text, encoding="utf-8")
            event.update(response=completion.text, prompt_tokens=completion.prompt_tokens,
                         completion_tokens=completion.completion_tokens, cost=completion.cost,
                         cached=completion.cached, truncated=completion.truncated)
        if error is not None:
            event["error"] = error
        if note is not None:  # e.g. an empty reply, which is retried: replayed, it is empty again
            event["note"] = note
        self._append(event)

    def check(self, attempt: int, stage: str, diagnostic: str) -> None:
        """The loop's verdict on one attempt (the last one appears in no prompt, so it is kept here)."""
        self._append({"event": "check", "attempt": attempt, "stage": stage, "diagnostic": diagnostic})
        name = f"{self.calls:02d}-check.txt"
        (self.dir / name).write_text(f"attempt {attempt}: {stage}\n{diagnostic}\n", encoding="utf-8")


@dataclass
class LLMClient:
    config: LLMConfig
    completion_fn: CompletionFn | None = None  # litellm.completion unless a test passes a replay
    sleep: Callable[[float], None] = time.sleep
    transcript: Transcript | None = None
    usage: Usage = field(default_factory=Usage)

    # ---- checks before any work ----------------------------------------------------------------------

    def preflight(self) -> None:
        """Fails at once, in one line, when litellm cannot tell the model's provider or a key is missing."""
        litellm = _litellm()
        model = self.config.model
        try:
            _, provider, _, _ = litellm.get_llm_provider(model, api_base=self.config.base_url)
        except Exception:
            raise LLMError(f"unknown model '{model}': litellm cannot tell its provider; name one, e.g. "
                           "openai/gpt-4o, anthropic/claude-sonnet-4-5, ollama/llama3 (or a local server: "
                           "openai/NAME with --llm-base-url URL)") from None
        if self.config.base_url:
            return  # a local or self-hosted endpoint: whether it wants a key is its business
        try:
            env = litellm.validate_environment(model=model)
        except Exception:
            return
        missing = [k for k in env.get("missing_keys", []) if _CREDENTIAL.search(k)]
        if missing:
            raise LLMError(f"no API key for '{model}' (provider {provider}): set {' or '.join(missing)} in the "
                           "environment, or point --llm-base-url at a local server")

    # ---- the call ------------------------------------------------------------------------------------

    def _key(self, messages: Sequence[Message]) -> str:
        c = self.config
        blob = json.dumps({"model": c.model, "base_url": c.base_url, "temperature": c.temperature,
                           "max_tokens": c.max_tokens, "messages": list(messages)}, sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _cache_path(self, key: str) -> Path:
        root = Path(self.config.cache_dir) if self.config.cache_dir else default_cache_dir()
        return root / key[:2] / f"{key}.json"

    def _cached(self, key: str) -> Completion | None:
        if not self.config.use_cache:
            return None
        path = self._cache_path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            text = str(data["text"])
        except (OSError, ValueError, KeyError, TypeError):
            return None  # absent, or a damaged entry: ask again
        return Completion(text, int(data.get("prompt_tokens", 0)), int(data.get("completion_tokens", 0)), 0.0,
                          cached=True, length=len(text))

    def _store(self, key: str, c: Completion) -> None:
        if not self.config.use_cache:
            return
        path = self._cache_path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Written whole and renamed, so that a concurrent run never reads half an entry.
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"model": self.config.model, "text": c.text, "prompt_tokens": c.prompt_tokens,
                           "completion_tokens": c.completion_tokens, "cost": c.cost}, fh)
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only cache only costs money on the next run

    def _call(self, messages: Sequence[Message]) -> Any:
        litellm = _litellm()
        fn = self.completion_fn or litellm.completion
        kwargs: dict[str, Any] = {"model": self.config.model, "messages": list(messages),
                                  "temperature": self.config.temperature, "timeout": self.config.timeout,
                                  "max_tokens": self.config.max_tokens, "num_retries": 0}
        if self.config.base_url:
            kwargs["api_base"] = self.config.base_url
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pydantic warns about litellm's types on first use
            return fn(**kwargs)

    def _completion(self, response: Any) -> Completion:
        text = _message_text(response)
        usage = getattr(response, "usage", None)
        pt = int(getattr(usage, "prompt_tokens", 0) or 0)
        ct = int(getattr(usage, "completion_tokens", 0) or 0)
        return Completion(text, pt, ct, _cost(response), length=len(text))

    def complete(self, messages: Sequence[Message]) -> Completion:
        """One reply to `messages`: from the cache, or from the provider with retries."""
        key = self._key(messages)
        call = self.transcript.request(self.config.model, messages) if self.transcript else 0
        hit = self._cached(key)
        if hit is not None:
            out = self._limit(hit)
            self.usage.add(out)
            if self.transcript:
                self.transcript.response(call, self.config.model, messages, out)
            return out
        delay = self.config.backoff
        last = ""
        for attempt in range(self.config.retries + 1):
            try:
                response = self._call(messages)
            except Exception as err:
                last = f"{type(err).__name__}: {_one_line(str(err))}"
                if self.transcript:
                    self.transcript.response(call, self.config.model, messages, None, error=last)
                if _not_an_api_answer(err):
                    where = f"the server at {self.config.base_url}" if self.config.base_url else "the provider"
                    raise LLMError(f"{self.config.model}: {where} did not answer with the API's JSON (an HTML page "
                                   "or other text): a configuration problem, not retried; check the model name and "
                                   f"--llm-base-url (an OpenAI-compatible server's URL ends in /v1). It said: "
                                   f"{_gist(err)}") from None
                if not _retryable(err):
                    raise LLMError(f"{self.config.model}: {last}") from None
                if attempt == self.config.retries:
                    break
                self.usage.retries += 1
                self.sleep(min(delay, self.config.max_backoff))
                delay *= 2
                continue
            out = self._completion(response)
            if not out.text.strip():
                # An empty reply is a provider hiccup (or a filtered answer): not worth caching, but recorded.
                last = "the provider returned an empty reply"
                if self.transcript:
                    self.transcript.response(call, self.config.model, messages, out, note=last)
                if attempt == self.config.retries:
                    break
                self.usage.retries += 1
                self.sleep(min(delay, self.config.max_backoff))
                delay *= 2
                continue
            self._store(key, out)
            out = self._limit(out)
            self.usage.add(out)
            if self.transcript:
                self.transcript.response(call, self.config.model, messages, out)
            return out
        raise LLMError(f"{self.config.model}: the provider failed {self.config.retries + 1} times; last: {last}")

    def _limit(self, c: Completion) -> Completion:
        if len(c.text) > self.config.max_response_chars:
            c.text = c.text[: self.config.max_response_chars]
            c.truncated = True
        return c


def _gist(err: BaseException) -> str:
    """What a non-API answer said, shortened: the HTML page's title where it has one."""
    text = str(err)
    title = re.search(r"<title>(.*?)</title>", text, re.I | re.S)
    if title:
        return f"an HTML page titled {title.group(1).strip()[:80]!r}"
    return _one_line(text)[:160]


def _message_text(response: Any) -> str:
    try:
        content = response.choices[0].message.content
    except (AttributeError, IndexError, KeyError, TypeError):
        try:
            content = response["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            return ""
    return content if isinstance(content, str) else ""


def _cost(response: Any) -> float | None:
    """USD for one response from litellm's (local) price table; None for models it has no price for."""
    hidden = getattr(response, "_hidden_params", None) or {}
    cost = hidden.get("response_cost") if isinstance(hidden, dict) else None
    if isinstance(cost, int | float):
        return float(cost)
    try:
        return float(_litellm().completion_cost(completion_response=response))
    except Exception:
        return None


class ReplayProvider:
    """A completion function that answers from a recorded transcript (a `transcript.jsonl` written by
    `Transcript`, or a list of its events) through litellm's `mock_response`, so replies are real litellm
    objects and nothing reaches the network. A recorded `error` naming a litellm exception class is raised
    instead. `requests` keeps every message list it was sent, for tests to inspect."""

    def __init__(self, events: str | os.PathLike[str] | Sequence[dict[str, Any]]) -> None:
        if isinstance(events, str | os.PathLike):
            lines = Path(events).read_text(encoding="utf-8").splitlines()
            events = [json.loads(line) for line in lines if line.strip()]
        self.events = [e for e in events if e.get("event", "call") == "call"]
        self.requests: list[list[Message]] = []
        # Bound now, so that a test may install this replay as litellm.completion itself.
        self._complete = _litellm().completion

    def __call__(self, **kwargs: Any) -> Any:
        litellm = _litellm()
        kwargs.pop("mock_response", None)

        if len(self.requests) >= len(self.events):
            raise AssertionError(f"the recorded transcript has only {len(self.events)} replies")
        event = self.events[len(self.requests)]
        self.requests.append([dict(m) for m in kwargs["messages"]])
        if "error" in event:
            kind, _, message = str(event["error"]).partition(": ")
            cls = getattr(litellm.exceptions, kind, None)
            if cls is None:
                raise RuntimeError(message or kind)
            raise cls(message=message, llm_provider="replay", model=kwargs["model"])
        kwargs.pop("timeout", None)
        kwargs.pop("num_retries", None)
        kwargs.pop("api_base", None)
        return self._complete(**kwargs, mock_response=event["response"])
