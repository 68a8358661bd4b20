"""The side list of chats (issue 31, item 6) in Chromium: seven chats started with the same message read
differently (each with its answer), none is an "Untitled chat", the search finds a chat by its answer and opens
it, and Delete's question is on the screen under a long list.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from browser_driver import BROWSER_MARKS, EVENT_COUNTER_JS, launch, send, wait_for_text
from ui_testlib import code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS

CHATS = 7
CASES = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"]
# Each chat's agent replays the script from its start: the answer differs by the clock it reads.
SCRIPT = [code_reply("Answer.", "import time\nfinal_answer(f'answer number {time.time_ns() % 999983}')")]


# The answer as shown once the run gives it: "answer number 123". The code that makes it shows first, while the
# step runs, and reads "answer number {time…": a chat left on that text (New chat) is left mid-run, unanswered.
ANSWER_SHOWN = "() => /answer number \\d/.test(document.querySelector('#chat')?.innerText || '')"


def labels(page) -> list[str]:
    return [label.inner_text() for label in page.locator("#chat-list label").all()]


def test_seven_chats_read_differently_are_found_and_deleted_in_view(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    from playwright.sync_api import expect

    (tmp_path / "data").mkdir()
    with run_app(write_transcript(tmp_path / "script.json", SCRIPT), tmp_path / "data") as url, \
            sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(viewport={"width": 1280, "height": 640}, device_scale_factor=1)
        context.add_init_script(EVENT_COUNTER_JS)
        page = context.new_page()
        page.set_default_timeout(30_000)
        try:
            page.goto(url)
            page.wait_for_selector("#chat")
            page.wait_for_function("Object.keys(localStorage).includes('agentdeck-browser')")
            for i in range(1, CHATS + 1):
                send(page, f"Please tell me the answer. It is for case {CASES[i - 1]}.")
                page.wait_for_function(ANSWER_SHOWN)
                page.wait_for_function("n => document.querySelectorAll('#chat-list label').length >= n", arg=i)
                page.locator("#new-chat-btn").click()
                page.wait_for_function("!(document.querySelector('#chat')?.innerText || '').includes('answer number')")
            titles = [label.rsplit(" · ", 1)[0] for label in labels(page)]
            assert len(titles) == CHATS and len(set(titles)) == CHATS, titles  # no two read the same
            assert all(t.startswith("tell me the answer") for t in titles), titles  # from the task, without "Please"
            assert not any("Untitled" in t for t in titles), titles

            search = page.locator("#chat-search textarea, #chat-search input, textarea#chat-search, input#chat-search")
            search.first.fill("case charlie")  # words of a message, not of its title
            search.first.press("Enter")
            # One list, filtered in place (no second list above the unfiltered one)
            page.wait_for_function("() => document.querySelectorAll('#chat-list label').length === 1")
            assert page.locator("#chat-search-results").count() == 0
            page.locator("#chat-list label").first.click()
            wait_for_text(page, "It is for case charlie.")
            # opening the chat found keeps the search applied (the list is filtered again after it shows)
            page.wait_for_function("() => document.querySelectorAll('#chat-list label').length === 1")

            search.first.fill("walrus")
            search.first.press("Enter")
            wait_for_text(page, "No chats match", where="#chat-search-note")
            assert labels(page) == []
            page.locator("#chat-search-clear").click()
            page.wait_for_function("n => document.querySelectorAll('#chat-list label').length === n", arg=CHATS)
            assert search.first.input_value() == ""
            expect(page.locator("#chat-search-clear")).to_be_hidden()

            page.locator("#chat-list label").last.click()
            # Delete once the chat clicked is open: selecting a chat closes the question, and on a loaded
            # server that close could land after the question opened and take it away under the click.
            page.wait_for_function("() => { const t = document.querySelector('#chat')?.innerText || '';"
                                   " return /answer number \\d/.test(t) && !t.includes('case charlie'); }")
            page.locator("#delete-chat-btn").click()
            expect(page.locator("#chat-delete-yes")).to_be_in_viewport(ratio=1.0, timeout=10_000)
            page.locator("#chat-delete-no").click()
        finally:
            context.close()
            browser.close()
