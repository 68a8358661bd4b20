"""InferenceClientModel (huggingface_hub.InferenceClient) against the loopback OpenAI-compatible server."""
from __future__ import annotations

import pytest

from agents.errors import ModelAuthenticationError, ModelConnectionError
from agents.models import InferenceClientModel, load_model
from agents.models.retry import RetryPolicy

MESSAGES = [{"role": "user", "content": "Hi!"}]
TOKEN = "hf_testtoken0123456789"


@pytest.fixture()
def model(server, monkeypatch) -> InferenceClientModel:
    # The test session sets HF_HUB_OFFLINE=1; huggingface_hub may talk to the loopback server only.
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "is_offline_mode", lambda: False)
    policy = RetryPolicy(max_retries=2, initial_delay=0.01, sleep=lambda s: None)
    return load_model("hf:Qwen/Qwen2.5-Coder-32B-Instruct", base_url=server.url, token=TOKEN, retry=policy)


def test_reply_stream_usage_and_stop(server, model):
    server.script = [{"type": "reply", "content": "Thought: x\n<code>1</code> tail", "usage": (12, 5)}] * 2
    reply = model.generate(MESSAGES, stop_sequences=["</code>"])
    assert reply.content == "Thought: x\n<code>1"
    assert (reply.token_usage.input_tokens, reply.token_usage.output_tokens) == (12, 5)
    assert server.requests[0]["stop"] == ["</code>"]
    assert server.headers[0]["authorization"] == f"Bearer {TOKEN}"
    deltas = list(model.generate_stream(MESSAGES, stop_sequences=["</code>"]))
    assert "".join(d.content for d in deltas) == "Thought: x\n<code>1"
    assert deltas[-1].reply.token_usage.output_tokens == 5


def test_retry_then_success_and_auth_error_not_retried(server, model):
    server.script = [{"type": "error", "status": 429, "message": "busy"}, {"type": "reply", "content": "ok"}]
    assert model.generate(MESSAGES).content == "ok"
    assert len(server.requests) == 2
    server.reset()
    server.script = [{"type": "error", "status": 401, "message": "Invalid credentials"}]
    with pytest.raises(ModelAuthenticationError, match="HF_TOKEN"):
        model.generate(MESSAGES)
    assert len(server.requests) == 1


def test_tool_calls(server, model):
    server.script = [{"type": "reply", "content": "", "tool_calls": [{"name": "add", "arguments": {"a": 1}}]}]
    reply = model.generate(MESSAGES, tools=[{"type": "function", "function": {
        "name": "add", "description": "Add.",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}])
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("add", {"a": 1})]


def test_offline_mode_gives_a_clear_error_without_retry(server):
    model = InferenceClientModel("Qwen/Qwen2.5-Coder-32B-Instruct", base_url=server.url,
                                 retry=RetryPolicy(max_retries=3, sleep=lambda s: pytest.fail("retried")))
    with pytest.raises(ModelConnectionError, match="HF_HUB_OFFLINE"):
        model.generate(MESSAGES)
    assert not server.requests


def test_model_id_and_no_secret_in_repr(model):
    assert model.model_id == "Qwen/Qwen2.5-Coder-32B-Instruct"
    assert model.context_size == 32768
    assert TOKEN not in repr(model)
