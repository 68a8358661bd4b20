"""The sidebar in Chromium: Delete asks first (Keep it keeps the chat), and the export box is out of sight
until there is an export."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from browser_driver import BROWSER_MARKS, open_page, send, wait_for_text
from ui_testlib import SCREENSHOT_DIR, code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS

SCRIPT = [code_reply("Answer.", "final_answer('forty-two')")]


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("chat-delete")
    (base / "data").mkdir()
    with run_app(write_transcript(base / "script.json", SCRIPT), base / "data") as url:
        yield url


def listed_chats(page) -> list[str]:
    return [label.inner_text() for label in page.locator("#chat-list label").all()]


def test_delete_asks_first_and_the_export_box_waits_for_an_export(app_url: str) -> None:
    with open_page(app_url) as page:
        export_box = page.locator("#export-file")
        assert export_box.is_hidden()  # nothing exported yet: no empty drop area taking the sidebar
        send(page, "Tell me the answer")
        wait_for_text(page, "forty-two")  # the code shows it first: export once the run has ended
        page.wait_for_function("(document.querySelector('#run-status') || {}).innerText?.startsWith('success')")
        page.wait_for_function("document.querySelectorAll('#chat-list label').length === 1")
        assert "Tell me the answer" in listed_chats(page)[0]

        page.locator("#export-md-btn").click()
        export_box.wait_for(state="visible")
        page.wait_for_selector("#export-file a[href$='.md']")
        stem = page.locator("#export-file td.filename .stem")
        assert stem.inner_text().startswith("Tell_me_the_answer")  # the whole name, not "Te… .md"

        page.locator("#delete-chat-btn").click()
        question = page.locator("#chat-delete-question")
        question.wait_for(state="visible")
        assert "Tell me the answer" in question.inner_text() and "cannot be undone" in question.inner_text()
        SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
        page.locator("#history-sidebar").screenshot(path=str(SCREENSHOT_DIR / "screenshot-delete-chat.png"))
        assert len(listed_chats(page)) == 1  # asking deleted nothing
        page.locator("#chat-delete-no").click()
        page.locator("#chat-delete-confirm").wait_for(state="hidden")
        assert len(listed_chats(page)) == 1

        page.locator("#delete-chat-btn").click()
        page.locator("#chat-delete-yes").click()
        page.wait_for_function("document.querySelectorAll('#chat-list label').length === 0")
        page.locator("#chat-delete-confirm").wait_for(state="hidden")
        wait_for_text(page, "Explore the penguins data set")  # the open chat was the deleted one: a fresh chat
