"""A visitor on a (simulated) Space who is not signed in: told in the chat what to do, nothing shown as failed."""
from __future__ import annotations

from pathlib import Path

from browser_driver import BROWSER_MARKS, open_page, send, wait_for_text
from ui_testlib import run_app

pytestmark = BROWSER_MARKS

SPACE_ENV = {"SYSTEM": "spaces", "SPACE_ID": "me/demo", "OAUTH_CLIENT_ID": "fake-client",
             "OAUTH_CLIENT_SECRET": "fake-secret", "OAUTH_SCOPES": "openid profile inference-api",
             "OPENID_PROVIDER_URL": "http://127.0.0.1:9", "AGENTDECK_MODEL": "hf:Qwen/Qwen2.5-Coder-32B-Instruct",
             "HF_TOKEN": ""}


def test_a_visitor_who_is_not_signed_in_gets_a_note_not_an_error(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    with run_app(tmp_path / "unused.json", data, extra_env={**SPACE_ENV, "HF_HOME": str(tmp_path / "hf")}) as url:
        with open_page(url) as page:
            page.wait_for_selector("#hf-login")
            send(page, "How many penguins are there?")
            wait_for_text(page, "Sign in to chat")
            chat = page.locator("#chat").inner_text()
            assert "right-hand column" in chat and "🎬 Penguins" in chat and "🎬 Seattle weather" in chat
            # The login button is where the note says: at the top of the right-hand column, right of the chat.
            login, chat_box = page.locator("#hf-login").bounding_box(), page.locator("#chat").bounding_box()
            assert login["x"] > chat_box["x"] + chat_box["width"] and login["y"] < chat_box["y"] + 200
            # Nothing is shown as failed: no error toast, no red badge; the message waits in the box.
            page.wait_for_function("!document.querySelector('#task-input textarea').disabled", timeout=10_000)
            assert page.locator("#task-input textarea").input_value() == "How many penguins are there?"
            assert page.locator(".toast-body.error, .toast-wrap .error").count() == 0
            assert page.locator("#chat .ad-error").count() == 0
