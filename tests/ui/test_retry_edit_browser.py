"""Retry and Edit-and-resend in Chromium (issue 19): a retry's new answer takes the old one's place; an edited
message and its answer replace the old ones, with the variables as they were before that message; a reload
shows the same chat (it was saved rewound)."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from browser_driver import BROWSER_MARKS, chat_text, open_page, send, wait_for_text
from ui_testlib import SCREENSHOT_DIR, code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS


def variables_check(label: str) -> str:
    """A reply whose answer says whether `y` (set by the message that is undone) and `x` (set before) exist."""
    code = ("try:\n    y\n    seen = 'y survived'\nexcept NameError:\n    seen = 'y is gone'\n"
            f"final_answer(f'{label}: {{seen}}, x = {{x}}')")
    return code_reply("Look at the variables.", code)


SCRIPT = [
    code_reply("Set it.", "x = 41\nfinal_answer('x is set')"),
    code_reply("Set another one.", "y = 7\nfinal_answer('old answer')"),
    variables_check("retried answer"),  # the retry's
    variables_check("edited answer"),  # the edited message's
]


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("retry-edit")
    (base / "data").mkdir()
    with run_app(write_transcript(base / "script.json", SCRIPT), base / "data") as url:
        yield url


def wait_until_idle(page) -> None:
    page.wait_for_function("!document.querySelector('#task-input textarea').disabled", timeout=40_000)
    page.wait_for_function("(document.querySelector('#run-status') || {}).innerText?.startsWith('success')")


def test_retry_then_edit_and_resend_replace_the_last_answer(app_url: str) -> None:
    with open_page(app_url) as page:
        send(page, "Set x")
        wait_for_text(page, "x is set")
        wait_until_idle(page)
        send(page, "Set y")
        wait_for_text(page, "old answer")
        wait_until_idle(page)

        page.locator("#retry-btn").click()
        wait_for_text(page, "retried answer: y is gone, x = 41")
        wait_until_idle(page)
        text = chat_text(page)
        assert "old answer" not in text and text.count("Set y") == 1 and "Rewound to before your last message" in text

        page.locator("#edit-last-btn").click()
        editor = page.locator("#edit-text textarea")
        editor.wait_for(state="visible")
        assert editor.input_value() == "Set y"
        editor.fill("Which variables are there?")
        SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOT_DIR / "screenshot-edit-last-message.png"))  # chat, edit box, buttons
        page.locator("#edit-send-btn").click()
        page.locator("#edit-panel").wait_for(state="hidden")
        wait_for_text(page, "edited answer: y is gone, x = 41")
        wait_until_idle(page)
        text = chat_text(page)
        assert "Which variables are there?" in text and "Set y" not in text
        assert "retried answer" not in text and "old answer" not in text and "x is set" in text

        page.reload()  # the saved chat is the rewound one
        page.wait_for_selector("#chat")
        wait_for_text(page, "edited answer: y is gone, x = 41")
        text = chat_text(page)
        assert "Which variables are there?" in text and "Set y" not in text and "retried answer" not in text

        page.locator("#edit-last-btn").click()  # an edit box left open closes with the chat it belongs to
        page.locator("#edit-panel").wait_for(state="visible")
        page.locator("#new-chat-btn").click()
        page.locator("#edit-panel").wait_for(state="hidden")


def test_retry_before_any_message_says_there_is_nothing_to_retry(app_url: str) -> None:
    with open_page(app_url) as page:
        page.locator("#new-chat-btn").click()
        page.wait_for_function("!document.querySelector('#task-input textarea').disabled")
        page.locator("#retry-btn").click()
        wait_for_text(page, "There is no message to retry yet")
        page.locator("#edit-last-btn").click()
        page.wait_for_selector(".toast-body", timeout=15_000)
        assert "no message to edit" in page.locator(".toast-body").first.inner_text()
        assert page.locator("#edit-panel").is_hidden()
