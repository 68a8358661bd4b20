"""Provider faults through the real litellm adapter and a loopback server: Retry-After, garbage and
repeated chunks, missing keys and refused connections (no network)."""
from __future__ import annotations

import socket
import time
from email.utils import formatdate

import pytest

from agents.errors import MissingApiKeyError, ModelConnectionError, ModelRateLimitError
from agents.models import load_model
from agents.models.errors_mapping import classify_error, to_model_error
from agents.models.retry import RetryPolicy
from agents.models.retry_after import parse_retry_after, retry_after_of

MESSAGES = [{"role": "user", "content": "Hi!"}]
SECRET = "sk-test-secret-0123456789"
TEXT = "abcdefghijklmnopqrstuvwxyz0123456789"


class Sleeps(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def make_model(url: str, sleeps=None, **policy):
    options = {"max_retries": 2, "initial_delay": 0.01, "max_delay": 0.05, **policy}
    if sleeps is not None:
        options["sleep"] = sleeps
    return load_model("openai/gpt-4.1-mini", api_base=url, api_key=SECRET, retry=RetryPolicy(**options))


def collect(stream) -> tuple[str, list]:
    """What a consumer shows: text, dropped whenever a retry says the partial text is void."""
    shown: list[str] = []
    notices = []
    for delta in stream:
        if delta.retry is not None:
            notices.append(delta.retry)
            if delta.retry.discarded_text:
                shown.clear()
        shown.append(delta.content)
    return "".join(shown), notices


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- Retry-After -------------------------------------------------------------------------------------
def test_retry_after_from_litellm_headers_is_obeyed_not_the_backoff(server):
    """litellm leaves exc.response.headers empty; the header's 7 s must still be used, not 0.05 s backoff."""
    sleeps = Sleeps()
    model = make_model(server.url, sleeps)
    server.script = [{"type": "error", "status": 429, "message": "slow down", "retry_after": 7},
                     {"type": "reply", "content": "after the wait"}]
    assert model.generate(MESSAGES).content == "after the wait"
    assert sleeps == [7.0]
    server.reset()
    server.script = [{"type": "error", "status": 503, "message": "busy", "retry_after": 3},
                     {"type": "reply", "content": "streamed"}]
    text, notices = collect(model.generate_stream(MESSAGES))
    assert text == "streamed" and sleeps == [7.0, 3.0]
    assert [(n.category, n.wait_s, n.retry_after_s, n.discarded_text) for n in notices] == [("server", 3.0, 3.0, False)]
    assert "HTTP 503" in notices[0].reason


def test_retry_after_is_really_waited(server):
    model = make_model(server.url)  # the real wait
    server.script = [{"type": "error", "status": 429, "message": "slow down", "retry_after": 0.2},
                     {"type": "reply", "content": "ok"}]
    started = time.monotonic()
    text, notices = collect(model.generate_stream(MESSAGES))
    assert text == "ok" and len(notices) == 1 and notices[0].wait_s == 0.2
    assert time.monotonic() - started >= 0.2
    assert len(server.requests) == 2


def test_a_huge_retry_after_is_capped(server, monkeypatch):
    sleeps = Sleeps()
    model = make_model(server.url, sleeps, max_retry_after=2.5)
    server.script = [{"type": "error", "status": 429, "message": "come back later", "retry_after": 120},
                     {"type": "reply", "content": "ok"}]
    text, notices = collect(model.generate_stream(MESSAGES))
    assert text == "ok" and sleeps == [2.5]
    assert (notices[0].wait_s, notices[0].retry_after_s) == (2.5, 120.0)
    monkeypatch.setenv("AGENTDECK_MODEL_MAX_RETRY_AFTER", "9")  # the app's setting: the library ignores it
    assert RetryPolicy().max_retry_after == 60.0


def test_rate_limit_that_never_ends_is_reported_as_such(server):
    sleeps = Sleeps()
    model = make_model(server.url, sleeps)
    server.script = [{"type": "error", "status": 429, "message": "slow down", "retry_after": 4}] * 3
    with pytest.raises(ModelRateLimitError, match="after 3 attempts"):
        model.generate(MESSAGES)
    assert sleeps == [4.0, 4.0]


def test_retry_after_values_and_places():
    assert parse_retry_after("12") == 12.0
    assert 25 <= parse_retry_after(formatdate(time.time() + 30, usegmt=True)) <= 30
    assert parse_retry_after("soon") is None

    class Headers(dict):
        pass

    class Wrapped(Exception):
        pass

    inner = Exception("429")
    inner.litellm_response_headers = Headers({"retry-after-ms": "1500"})
    try:
        try:
            raise inner
        except Exception as exc:
            raise Wrapped("wrapper") from exc
    except Wrapped as outer:
        assert retry_after_of(outer) == 1.5


# --- faults part-way through a stream ----------------------------------------------------------------
def test_a_chunk_that_is_not_json_restarts_the_call(server):
    model = make_model(server.url, Sleeps())
    server.script = [{"type": "garbage_mid", "content": TEXT}, {"type": "reply", "content": TEXT}]
    text, notices = collect(model.generate_stream(MESSAGES))
    assert text == TEXT and len(server.requests) == 2
    assert notices[0].discarded_text and "not JSON" in notices[0].reason


def test_litellm_repeated_chunk_guard_restarts_the_call(server):
    model = make_model(server.url, Sleeps())
    server.script = [{"type": "repeat", "piece": "again ", "times": 120}, {"type": "reply", "content": TEXT}]
    text, notices = collect(model.generate_stream(MESSAGES))
    assert text == TEXT and len(server.requests) == 2
    assert notices[0].discarded_text and "repeating" in notices[0].reason


# --- missing keys and connections ----------------------------------------------------------------------
@pytest.mark.parametrize("model_id, variable", [("openai/gpt-4.1-mini", "OPENAI_API_KEY"),
                                                ("anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY")])
def test_missing_key_is_named_before_any_request(server, monkeypatch, model_id, variable):
    monkeypatch.delenv(variable, raising=False)
    sleeps = Sleeps()
    model = load_model(model_id, api_base=server.url,
                       retry=RetryPolicy(max_retries=4, initial_delay=0.01, sleep=sleeps))
    for call in (lambda: model.generate(MESSAGES), lambda: list(model.generate_stream(MESSAGES))):
        with pytest.raises(MissingApiKeyError) as info:
            call()
        assert variable in str(info.value) and "HTTP" not in str(info.value)
    assert server.requests == [] and sleeps == []


def test_missing_credentials_reported_by_a_library_is_not_a_server_error():
    class OpenAIError(Exception):
        pass

    class InternalServerError(Exception):
        status_code = 500

    try:
        try:
            raise OpenAIError("Missing credentials. Please pass an `api_key`, or set the `OPENAI_API_KEY` variable")
        except OpenAIError as exc:
            raise InternalServerError("InternalServerError: OpenAIException - Missing credentials") from exc
    except InternalServerError as wrapped:
        info = classify_error(wrapped)
        error = to_model_error(wrapped, "openai/gpt-4.1-mini", info=info)
    assert info.category == "missing_key" and not info.retryable
    assert isinstance(error, MissingApiKeyError) and "OPENAI_API_KEY" in str(error) and "500" not in str(error)


def test_refused_connection_is_named_as_such(server):
    sleeps = Sleeps()
    port = free_port()
    model = make_model(f"http://127.0.0.1:{port}/v1", sleeps)
    for call in (lambda: model.generate(MESSAGES), lambda: list(model.generate_stream(MESSAGES))):
        with pytest.raises(ModelConnectionError) as info:
            call()
        message = str(info.value)
        assert f"Could not connect to 127.0.0.1:{port}" in message and "connection refused" in message
        assert "HTTP 500" not in message and "server errors" not in message
    assert len(sleeps) == 4  # retried (a server may be starting), within the bound
