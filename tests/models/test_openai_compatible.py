"""An OpenAI-compatible server configured like a provider key (agents/models/compatible.py)."""
from __future__ import annotations

import pytest

from agents.errors import ConfigurationError
from agents.host_settings import configure_host, reset_host
from agents.models.compatible import operator_server, server_from_env
from agents.models.loader import check_model_string, load_model
from agents.models.selection import default_model_string

MESSAGES = [{"role": "user", "content": "Say hello."}]


@pytest.fixture(autouse=True)
def _no_operator_server():
    reset_host()
    yield
    reset_host()


def test_the_operators_server_its_key_and_its_models(server, monkeypatch) -> None:
    """As the app configures it from AGENTDECK_OPENAI_* (ui/config/apply.py)."""
    configure_host(compatible_server=operator_server(server.url + "/", "sk-gateway", ["local-coder", " other"]))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-openai")  # never sent to the operator's server
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # the host setting comes first
    assert default_model_string() == "openai-compatible:local-coder"
    assert check_model_string("openai-compatible:other") == "openai-compatible:other"
    server.script = [{"type": "reply", "content": "Hello from the gateway.", "usage": (5, 4)}]
    reply = load_model("openai-compatible:local-coder").generate(MESSAGES)
    assert reply.content == "Hello from the gateway."
    assert server.paths == ["/v1/chat/completions"] and server.requests[0]["model"] == "local-coder"
    assert server.headers[0]["authorization"] == "Bearer sk-gateway"


def test_the_sdk_pair_works_and_a_server_without_a_key_gets_a_placeholder(server, monkeypatch) -> None:
    monkeypatch.setenv("AGENTDECK_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # the library never reads this
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    server.script = [{"type": "reply", "content": "ok"}]
    assert load_model("openai-compatible:llama").generate(MESSAGES).content == "ok"
    assert server.headers[0]["authorization"] == "Bearer not-needed"


@pytest.mark.parametrize("url", ["ftp://host/v1", "127.0.0.1:8000", "http://user:pw@host/v1", "file:///etc/passwd"])
def test_a_bad_address_is_refused_with_what_to_set(url, monkeypatch) -> None:
    with pytest.raises(ConfigurationError, match="AGENTDECK_OPENAI_BASE_URL"):
        operator_server(url, None)
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    with pytest.raises(ConfigurationError, match="OPENAI_BASE_URL"):
        server_from_env()


def test_a_bad_address_in_the_settings_stops_the_start(monkeypatch) -> None:
    from ui.config import load_settings
    from ui.config.apply import apply_to_libraries
    from ui.config.base import SettingsError

    monkeypatch.setenv("AGENTDECK_OPENAI_BASE_URL", "http://user:pw@host/v1")
    with pytest.raises(SettingsError, match="AGENTDECK_OPENAI_BASE_URL must not hold a user name"):
        apply_to_libraries(load_settings())


def test_without_an_address_the_model_string_says_what_to_set(monkeypatch) -> None:
    for name in ("AGENTDECK_OPENAI_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigurationError, match="set AGENTDECK_OPENAI_BASE_URL"):
        check_model_string("openai-compatible:local-coder")
