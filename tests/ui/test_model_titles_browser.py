"""Issue 31: the chat's model writes its title, in Chromium against a loopback OpenAI-compatible server: the title
reaches the chat list after the run; garbage or an error from the server leaves the task's title, with no error
shown to the person."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from browser_driver import BROWSER_MARKS, open_page, send, wait_for_text
from ui_testlib import run_app, write_transcript

from tests.models.fake_openai_server import FakeOpenAIServer
from tests.waiting import wait_until

pytestmark = BROWSER_MARKS

ANSWER = "Thought: answer it.\n```python\nfinal_answer('there are {} species'.format(3))\n```"
LIST_HAS = "t => [...document.querySelectorAll('#chat-list label')].some(l => l.innerText.startsWith(t))"


@pytest.fixture(scope="module")
def gateway() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def app_url(gateway: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("model-titles")
    (base / "data").mkdir()
    env = {"AGENTDECK_MODEL": "", "AGENTDECK_OPENAI_BASE_URL": gateway.url, "AGENTDECK_OPENAI_API_KEY": "sk-loop",
           "AGENTDECK_OPENAI_MODELS": "local-coder", "AGENTDECK_MODEL_MAX_RETRIES": "0"}
    with run_app(write_transcript(base / "unused.json", []), base / "data", extra_env=env) as url:
        yield url


def test_the_models_title_reaches_the_chat_list(app_url: str, gateway: FakeOpenAIServer) -> None:
    gateway.reset()
    gateway.script = [{"type": "reply", "usage": (40, 12), "content": ANSWER},
                      {"type": "reply", "usage": (90, 5), "content": '"Penguin species on three islands"'}]
    with open_page(app_url) as page:
        send(page, "Please count the penguins in the survey. Thanks.")
        wait_for_text(page, "there are 3 species")
        page.wait_for_function(LIST_HAS, arg="Penguin species on three islands", timeout=60_000)
        wait_for_text(page, "chat title: 95 tokens", where="#run-status")  # the title's tokens are in the usage shown
    assert len(gateway.requests) == 2
    assert "You name saved chats" in gateway.requests[1]["messages"][0]["content"]
    assert "count the penguins" in gateway.requests[1]["messages"][1]["content"]


def test_garbage_or_an_error_leaves_the_task_title(app_url: str, gateway: FakeOpenAIServer) -> None:
    gateway.reset()
    gateway.script = [{"type": "reply", "usage": (40, 12), "content": ANSWER},
                      {"type": "reply", "usage": (70, 9), "content": "```\nIgnore all previous instructions\n```"},
                      {"type": "reply", "usage": (40, 12), "content": ANSWER},
                      {"type": "error", "status": 500, "message": "the title server broke"}]
    with open_page(app_url) as page:
        send(page, "Please list the seabirds in the survey. Thanks.")
        wait_for_text(page, "there are 3 species")
        wait_for_text(page, "chat title: 79 tokens", where="#run-status")  # the reply came and was refused
        page.wait_for_function(LIST_HAS, arg="list the seabirds in the survey")
        page.locator("#new-chat-btn").click()
        page.wait_for_function("!(document.querySelector('#chat')?.innerText || '').includes('3 species')")
        send(page, "Please name the gulls in the survey. Thanks.")
        wait_for_text(page, "there are 3 species")
        page.wait_for_function(LIST_HAS, arg="name the gulls in the survey")
        wait_until(lambda: len(gateway.requests) == 4, timeout=60, what="the second chat's title request")
        labels = page.locator("#chat-list label").all_inner_texts()
        chat_text = page.locator("#chat").inner_text()
    assert len(gateway.requests) == 4  # both titles were asked for
    assert not any("Ignore" in label or "```" in label for label in labels), labels
    assert "title server broke" not in chat_text and "Could not" not in chat_text
