"""A pending decision is in reach wherever its chat is open (issue 31, items 2 and 7 and 10): a tab closed and the
URL opened again, a second tab on the same chat, after a restart; the panel's buttons inside the window.

One app per test (each starts a fresh browser identity); the model is a replay script.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from browser_driver import BROWSER_MARKS, EVENT_COUNTER_JS, choose_mode, launch, send, wait_for_text
from ui_testlib import code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS

APPROVE_SCRIPT = [code_reply("Print a greeting.", "print('approved in the new tab')\nfinal_answer('greeted')")]


def new_tab(context, url: str):
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.goto(url)
    page.wait_for_selector("#chat")
    page.wait_for_function("Object.keys(localStorage).includes('agentdeck-browser')")
    return page


def test_a_tab_opened_again_shows_the_pending_decision(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    transcript = write_transcript(tmp_path / "script.json", APPROVE_SCRIPT)
    (tmp_path / "data").mkdir()
    with run_app(transcript, tmp_path / "data") as url, sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        context.add_init_script(EVENT_COUNTER_JS)
        try:
            first = new_tab(context, url)
            choose_mode(first, "Approve each code step")
            send(first, "Greet me, please.")
            first.locator("#edit-code").wait_for(state="visible")
            first.close()
            second = new_tab(context, url)
            wait_for_text(second, "Greet me, please.")
            second.locator("#approve-btn").wait_for(state="visible")
            assert "approved in the new tab" in second.locator("#edit-code").inner_text()
            # A message typed while the decision waits is not sent, and not lost: it stays in the box, and the
            # chat says why.
            send(second, "Also say goodbye.")
            wait_for_text(second, "waiting for your decision in the panel under the chat")
            assert second.locator("#task-input textarea").input_value() == "Also say goodbye."
            second.locator("#approve-btn").click()
            wait_for_text(second, "greeted")
        finally:
            context.close()
            browser.close()
