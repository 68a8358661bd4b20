"""Units: stop filtering of streams, backoff delays, and the classification of provider errors."""
from __future__ import annotations

import pytest

from agents.errors import ModelAuthenticationError, ModelConnectionError, ModelRateLimitError
from agents.models.errors_mapping import classify_error, redact, to_model_error
from agents.models.retry import ErrorContext, RetryPolicy, call_with_retry, stream_with_retry
from agents.models.streaming import EndCutter, StopFilter


@pytest.mark.parametrize("pieces", [
    ["Thought: ok\n<co", "de>x</co", "de>tail"],
    ["Thought: ok\n<code>x<", "/", "c", "o", "d", "e>", "tail"],
    ["Thought: ok\n<code>x</code>tail"],
])
def test_stop_filter_cuts_across_piece_boundaries(pieces):
    stop = StopFilter(["</code>", "Observation:"])
    shown = "".join(stop.feed(p) for p in pieces) + stop.flush()
    assert shown == "Thought: ok\n<code>x" == stop.text and stop.stopped


def test_stop_filter_releases_held_text_at_the_end():
    stop = StopFilter(["Observation:"])
    assert stop.feed("value: Obs") == "value: "
    assert stop.flush() == "Obs"
    assert stop.text == "value: Obs" and not stop.stopped


def test_end_cutter_keeps_the_matched_block():
    import re

    cutter = EndCutter([re.compile(r"```python\n.*?\n```", re.DOTALL)])
    pieces = ["Thought: a\n```py", "thon\nx = 1\n``", "`\n\nNew task: more", " text"]
    assert "".join(cutter.feed(p) for p in pieces) == "Thought: a\n```python\nx = 1\n```"


def test_backoff_grows_is_capped_and_jittered():
    policy = RetryPolicy(initial_delay=1, multiplier=2, max_delay=5, jitter=0.25)
    for index, base in enumerate([1, 2, 4, 5, 5]):
        assert base * 0.75 <= policy.delay(index) <= base * 1.25
    assert 4 * 0.75 <= policy.delay(0, retry_after=4) <= 4 * 1.25  # Retry-After honoured within bounds


def test_policy_is_what_the_program_passes_never_the_environment(monkeypatch):
    """The app passes its AGENTDECK_MODEL_* settings (ui/agent_factory.py); the library reads none of them."""
    monkeypatch.setenv("AGENTDECK_MODEL_MAX_RETRIES", "7")
    monkeypatch.setenv("AGENTDECK_MODEL_RETRY_DELAY", "0.5")
    assert (RetryPolicy().max_retries, RetryPolicy().initial_delay) == (4, 1.0)
    policy = RetryPolicy(max_retries=7, initial_delay=0.5)
    assert (policy.max_retries, policy.initial_delay) == (7, 0.5)


class FakeStatusError(Exception):
    def __init__(self, status: int, message: str = "") -> None:
        super().__init__(message or f"HTTP {status}")
        self.status_code = status


def test_call_with_retry_retries_only_transient_errors():
    slept = []
    policy = RetryPolicy(max_retries=3, initial_delay=0.1, sleep=slept.append)
    outcomes = iter([FakeStatusError(500), ConnectionResetError("reset"), TimeoutError(), "ok"])

    def flaky():
        outcome = next(outcomes)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    assert call_with_retry(flaky, policy, ErrorContext("m")) == "ok" and len(slept) == 3
    calls = []
    with pytest.raises(ModelAuthenticationError):
        call_with_retry(lambda: calls.append(1) or (_ for _ in ()).throw(FakeStatusError(401)), policy,
                        ErrorContext("openai/x"))
    assert len(calls) == 1


def test_stream_restarts_only_before_any_content():
    attempts = []

    def start():
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionResetError("dropped before anything")
        yield "a"
        yield "b"

    policy = RetryPolicy(max_retries=2, sleep=lambda s: None)
    assert list(stream_with_retry(start, policy, ErrorContext("m"))) == ["a", "b"]

    def breaks_midway():
        yield "a"
        raise ConnectionResetError("dropped midway")

    with pytest.raises(ModelConnectionError, match="cut off part-way"):
        list(stream_with_retry(breaks_midway, policy, ErrorContext("m")))


def test_classification_and_redaction():
    assert classify_error(FakeStatusError(429)).category == "rate_limit"
    assert classify_error(FakeStatusError(403)).category == "auth"
    assert classify_error(FakeStatusError(400, "maximum context length exceeded")).category == "context"
    error = to_model_error(FakeStatusError(429, "key sk-abcdef1234567890 is limited"), "openai/x", attempts=5,
                           secrets=("sk-abcdef1234567890",))
    assert isinstance(error, ModelRateLimitError) and "sk-abcdef" not in str(error) and "5 attempts" in str(error)
    assert redact("Bearer abc.def hf_abcdefghijk", ()) == "*** ***"


def _wrapped(cause: BaseException) -> BaseException:
    """`cause` under a library wrapper that claims HTTP 500, as litellm reports transport failures."""
    class InternalServerError(Exception):
        status_code = 500

    try:
        try:
            raise cause
        except BaseException as exc:
            raise InternalServerError("InternalServerError: OpenAIException - Connection error.") from exc
    except InternalServerError as wrapper:
        return wrapper


def test_connection_failures_are_named_not_http_500():
    import socket

    class ConnectTimeout(Exception):
        pass

    for cause, reason in [(ConnectionRefusedError(111, "refused"), "connection refused"),
                          (socket.gaierror(-2, "Name or service not known"), "host name not found"),
                          (ConnectTimeout("timed out"), "timed out while connecting")]:
        info = classify_error(_wrapped(cause))
        assert (info.category, info.reason, info.status_code) == ("connect", reason, None) and info.retryable
        message = str(to_model_error(_wrapped(cause), "openai/x", attempts=3, endpoint="http://10.1.2.3:8000/v1"))
        assert message.startswith(f"Could not connect to 10.1.2.3:8000 for model 'openai/x' ({reason}) after 3")
        assert "HTTP 500" not in message
