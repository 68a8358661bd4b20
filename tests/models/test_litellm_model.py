"""LiteLLMModel against a scripted OpenAI-compatible server on loopback (no network)."""
from __future__ import annotations

import pytest

from agents.errors import (
    ContentFilteredError,
    ContextWindowExceededError,
    ModelAuthenticationError,
    ModelConnectionError,
    ModelNotFoundError,
    ModelRateLimitError,
)
from agents.models import LiteLLMModel, load_model
from agents.models.retry import RetryPolicy

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi!"}]
SECRET = "sk-test-secret-0123456789"
TOOLS = [{"type": "function", "function": {
    "name": "add", "description": "Add two numbers.",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                   "required": ["a", "b"]}}}]


class Sleeps(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture()
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture()
def model(server, sleeps) -> LiteLLMModel:
    policy = RetryPolicy(max_retries=2, initial_delay=0.01, max_delay=0.05, sleep=sleeps)
    return load_model("openai/gpt-4.1-mini", api_base=server.url, api_key=SECRET, retry=policy)


def test_plain_reply_with_usage(server, model):
    server.script = [{"type": "reply", "content": "Hello!", "usage": (21, 3)}]
    reply = model.generate(MESSAGES)
    assert reply.content == "Hello!"
    assert (reply.token_usage.input_tokens, reply.token_usage.output_tokens) == (21, 3)
    assert server.requests[0]["messages"] == MESSAGES
    assert server.requests[0]["model"] == "gpt-4.1-mini"
    assert server.headers[0]["authorization"] == f"Bearer {SECRET}"


def test_streamed_reply_joins_and_reports_usage(server, model):
    server.script = [{"type": "reply", "content": "One, two, three, four.", "usage": (30, 9)}]
    deltas = list(model.generate_stream(MESSAGES))
    pieces = [d.content for d in deltas if d.content]
    assert len(pieces) > 1 and "".join(pieces) == "One, two, three, four."
    final = deltas[-1].reply
    assert final is not None and final.content == "One, two, three, four."
    assert (final.token_usage.input_tokens, final.token_usage.output_tokens) == (30, 9)
    assert server.requests[0]["stream"] is True
    assert server.requests[0]["stream_options"] == {"include_usage": True}


def test_stop_sequence_is_sent_and_honoured(server, model):
    text = "Thought: go\n<code>x = 1</code>\nObservation: nothing"
    server.script = [{"type": "reply", "content": text}, {"type": "reply", "content": text}]
    assert model.generate(MESSAGES, stop_sequences=["</code>"]).content == "Thought: go\n<code>x = 1"
    assert server.requests[0]["stop"] == ["</code>"]
    deltas = list(model.generate_stream(MESSAGES, stop_sequences=["</code>"]))
    assert "".join(d.content for d in deltas) == "Thought: go\n<code>x = 1"


def test_stop_is_trimmed_locally_when_the_server_ignores_it(server, model):
    text = "Thought: go\n<code>x = 1</code>\nObservation: made up"
    server.script = [{"type": "reply", "content": text, "ignore_stop": True}] * 2
    assert model.generate(MESSAGES, stop_sequences=["Observation:"]).content == "Thought: go\n<code>x = 1</code>\n"
    deltas = list(model.generate_stream(MESSAGES, stop_sequences=["Observation:"]))
    assert "".join(d.content for d in deltas) == "Thought: go\n<code>x = 1</code>\n"
    assert deltas[-1].reply.content == "Thought: go\n<code>x = 1</code>\n"


def test_model_refusing_stop_parameter_is_retried_without_it(server, model):
    server.script = [
        {"type": "error", "status": 400, "message": "Unsupported parameter: 'stop' is not supported with this model."},
        {"type": "reply", "content": "abc STOP def", "ignore_stop": True},
        {"type": "reply", "content": "ghi STOP jkl", "ignore_stop": True},
    ]
    assert model.generate(MESSAGES, stop_sequences=["STOP"]).content == "abc "
    assert "stop" in server.requests[0] and "stop" not in server.requests[1]
    assert model.generate(MESSAGES, stop_sequences=["STOP"]).content == "ghi "  # remembered: no stop sent
    assert "stop" not in server.requests[2]


def test_rate_limit_then_success_is_retried_with_backoff(server, model, sleeps):
    server.script = [{"type": "error", "status": 429, "message": "slow down"},
                     {"type": "error", "status": 503, "message": "overloaded"},
                     {"type": "reply", "content": "finally"}]
    assert model.generate(MESSAGES).content == "finally"
    assert len(server.requests) == 3
    assert len(sleeps) == 2 and all(0 < s <= 0.05 * 1.25 for s in sleeps)


def test_retries_are_bounded(server, model, sleeps):
    server.script = [{"type": "error", "status": 429, "message": "slow down"}] * 5
    with pytest.raises(ModelRateLimitError) as info:
        model.generate(MESSAGES)
    assert len(server.requests) == 3  # the first try and max_retries=2 retries
    assert len(sleeps) == 2
    assert "rate-limited after 3 attempts" in str(info.value)


def test_bad_key_fails_at_once_with_a_clear_error(server, model, sleeps):
    server.script = [{"type": "error", "status": 401, "message": f"Incorrect API key provided: {SECRET}"}]
    with pytest.raises(ModelAuthenticationError) as info:
        model.generate(MESSAGES)
    assert len(server.requests) == 1 and not sleeps
    message = str(info.value)
    assert "OPENAI_API_KEY" in message and SECRET not in message


def test_unknown_model_context_and_content_errors(server, model):
    server.script = [{"type": "error", "status": 404, "message": "The model `nope` does not exist"}]
    with pytest.raises(ModelNotFoundError, match="not found"):
        model.generate(MESSAGES)
    server.script = [{"type": "error", "status": 400,
                      "message": "This model's maximum context length is 8192 tokens. However, you requested 9000."}]
    with pytest.raises(ContextWindowExceededError, match="max_steps"):
        model.generate(MESSAGES)
    server.script = [{"type": "error", "status": 400, "message": "The response was filtered due to the prompt "
                      "triggering Azure OpenAI's content management policy."}]
    with pytest.raises(ContentFilteredError, match="content policy"):
        model.generate(MESSAGES)
    assert len(server.requests) == 3  # none of these is retried


def test_connection_dropped_before_reply_is_retried(server, model):
    server.script = [{"type": "drop_before"}, {"type": "reply", "content": "recovered"}]
    assert model.generate(MESSAGES).content == "recovered"
    server.reset()
    server.script = [{"type": "drop_before"}, {"type": "reply", "content": "streamed again"}]
    assert "".join(d.content for d in model.generate_stream(MESSAGES)) == "streamed again"
    assert len(server.requests) == 2


def test_connection_dropped_mid_stream_is_retried_and_the_partial_text_discarded(server, model):
    """The stream restarts from scratch; a retry delta tells the consumer to drop what it got."""
    text = "abcdefghijklmnopqrstuvwxyz0123456789"
    server.script = [{"type": "drop_mid", "content": text}, {"type": "reply", "content": text}]
    shown: list[str] = []
    notices = []
    for delta in model.generate_stream(MESSAGES):
        if delta.retry is not None:
            notices.append(delta.retry)
            if delta.retry.discarded_text:
                shown.clear()
        shown.append(delta.content)
    assert len(server.requests) == 2
    assert len(notices) == 1 and notices[0].discarded_text and notices[0].reason == "the connection dropped"
    assert "".join(shown) == text


def test_stream_cut_every_time_fails_with_a_clear_error(server, model):
    server.script = [{"type": "drop_mid", "content": "abcdefghijklmnopqrstuvwxyz0123456789"}] * 3
    with pytest.raises(ModelConnectionError, match="cut off part-way") as info:
        list(model.generate_stream(MESSAGES))
    assert len(server.requests) == 3 and "HTTP 500" not in str(info.value)


def test_native_tool_calls(server, model):
    call = {"name": "add", "arguments": {"a": 2, "b": 3}}
    server.script = [{"type": "reply", "content": "", "tool_calls": [call]}] * 2
    reply = model.generate(MESSAGES, tools=TOOLS)
    assert [(c.name, c.arguments, c.id) for c in reply.tool_calls] == [("add", {"a": 2, "b": 3}, "call_0")]
    assert server.requests[0]["tools"] == TOOLS
    streamed = list(model.generate_stream(MESSAGES, tools=TOOLS))[-1].reply
    assert [(c.name, c.arguments) for c in streamed.tool_calls] == [("add", {"a": 2, "b": 3})]
    assert model.supports_native_tools


def test_history_with_tool_calls_and_images_is_sent_in_openai_format(server, model):
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "What is in this image?"}, image]},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "call_7", "type": "function", "function": {"name": "add", "arguments": {"a": 1}}}]},
        {"role": "tool", "tool_call_id": "call_7", "content": "2"},
    ]
    model.generate(messages, tools=TOOLS)
    sent = server.requests[0]["messages"]
    assert sent[0]["content"][1] == image
    assert sent[1]["tool_calls"][0]["function"] == {"name": "add", "arguments": '{"a": 1}'}
    assert sent[2] == {"role": "tool", "tool_call_id": "call_7", "content": "2"}


def test_secrets_never_in_repr_and_context_size_known(server):
    model = LiteLLMModel("openai/gpt-4.1-mini", api_base=server.url, api_key=SECRET)
    assert SECRET not in repr(model) and SECRET not in str(vars(model).get("request_kwargs"))
    assert model.context_size and model.context_size >= 100_000
    assert LiteLLMModel("some-local-model", api_base=server.url).litellm_model == "openai/some-local-model"
    assert LiteLLMModel("ollama/qwen2.5-coder:7b").litellm_model == "ollama_chat/qwen2.5-coder:7b"
