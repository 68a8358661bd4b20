"""The side list's search (issue 31, item 6) as people edit a search box in Chromium: emptied with the keyboard
(select all, Backspace) the list shows every chat again, and a word pasted filters it as a word typed does.

Found by hand: typing filtered the list, but a box emptied with Backspace kept it filtered ("Showing 1 of your
chats" over an empty box) and a pasted word did nothing (3 of 3 tries each).
"""
from __future__ import annotations

from pathlib import Path

import pytest
from browser_driver import BROWSER_MARKS, EVENT_COUNTER_JS, launch, open_tab, send, wait_for_text
from ui_testlib import code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS

SCRIPT = [code_reply("Answer.", "import time\nfinal_answer(f'answer number {time.time_ns() % 999983}')")]
TASKS = ["What is the mean price in the sales table?", "Plot rainfall by month for Lisbon"]


def listed(page, count: int) -> None:
    page.wait_for_function("n => document.querySelectorAll('#chat-list label').length === n", arg=count,
                           timeout=15_000)


def test_a_search_emptied_or_pasted_filters_the_list_again(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    (tmp_path / "data").mkdir()
    with run_app(write_transcript(tmp_path / "script.json", SCRIPT), tmp_path / "data") as url, \
            sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        context.add_init_script(EVENT_COUNTER_JS)
        page = open_tab(context, url)
        try:
            for task in TASKS:
                send(page, task)
                wait_for_text(page, "answer number")
                page.locator("#new-chat-btn").click()
                page.wait_for_function("!(document.querySelector('#chat')?.innerText || '').includes('answer')")
            listed(page, 2)
            search = page.locator("#chat-search input, #chat-search textarea").first
            search.click()
            page.keyboard.type("rainfall", delay=20)
            listed(page, 1)
            search.press("Control+a")
            search.press("Backspace")  # the box emptied with the keyboard: every chat again
            listed(page, 2)
            page.wait_for_function("() => !document.querySelector('#chat-search-state')?.offsetParent")
            page.keyboard.insert_text("Lisbon")  # as a paste puts it in
            listed(page, 1)
            assert "Lisbon" in page.locator("#chat-list").inner_text()
        finally:
            context.close()
            browser.close()
