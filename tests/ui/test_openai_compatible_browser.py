"""Issue 31: the app pointed at an OpenAI-compatible server (a base URL, a key and its model names in the
environment), in Chromium, against a loopback server the test starts that answers /v1/chat/completions."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from browser_driver import BROWSER_MARKS, open_page, send, wait_for_text
from ui_testlib import run_app, write_transcript

from tests.models.fake_openai_server import FakeOpenAIServer

pytestmark = BROWSER_MARKS

KEY = "sk-loopback-gateway-7f1e"


@pytest.fixture(scope="module")
def gateway() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def app_url(gateway: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("openai-compatible")
    (base / "data").mkdir()
    env = {"AGENTDECK_MODEL": "", "AGENTDECK_OPENAI_BASE_URL": gateway.url, "AGENTDECK_OPENAI_API_KEY": KEY,
           "AGENTDECK_OPENAI_MODELS": "local-coder,local-coder-large", "OPENAI_API_KEY": "sk-never-sent"}
    # The transcript is unused: AGENTDECK_MODEL is empty, so the server's first model is the default.
    with run_app(write_transcript(base / "unused.json", []), base / "data", extra_env=env) as url:
        yield url


def test_the_app_runs_on_the_operators_openai_compatible_server(app_url: str, gateway: FakeOpenAIServer) -> None:
    reply = "Thought: answer it.\n```python\nfinal_answer('hello from the loopback gateway')\n```"
    gateway.script = [{"type": "reply", "usage": (40, 12), "content": reply}]
    with open_page(app_url) as page:
        picker = page.locator("#model-picker input")
        assert picker.input_value() == "openai-compatible:local-coder"
        picker.click()
        options = page.get_by_role("option").all_inner_texts()
        assert "openai-compatible:local-coder-large" in [o.strip() for o in options]
        page.keyboard.press("Escape")
        send(page, "Say hello")
        wait_for_text(page, "hello from the loopback gateway")
    assert gateway.paths and set(gateway.paths) == {"/v1/chat/completions"}
    assert gateway.requests[0]["model"] == "local-coder"
    assert {h["authorization"] for h in gateway.headers} == {f"Bearer {KEY}"}
