"""Saved chats in a real browser (Debian's Chromium, Playwright): reload, then restart the app, resume.

One browser context for the whole test, so the browser's identity (gr.BrowserState, in localStorage) is the
same across the reload and the restart; the app restarts on the same port (localStorage is per origin).
"""
from __future__ import annotations

from pathlib import Path

import pytest
from browser_driver import BROWSER_MARKS, chat_text, launch, panel_links, send, wait_for_text
from ui_testlib import code_reply, free_port, run_app, write_transcript

SECRET = "browser-test-secret-0123456789abcdef"

FIRST = [code_reply("Set a variable and write a file.",
                    "answer_value = 6 * 7\nopen('note.txt', 'w').write('hello')\nprint('set', answer_value)"),
         code_reply("Done.", "final_answer(f'The value is {answer_value}')")]
AFTER_RESTART = [code_reply("Use the variable from before.", "print('still', answer_value + 1)"),
                 code_reply("Done.", "final_answer(f'Now {answer_value + 1}')")]

pytestmark = BROWSER_MARKS


def test_resume_after_reload_and_after_restart(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    transcript = write_transcript(tmp_path / "script.json", FIRST)
    data = tmp_path / "data"
    data.mkdir()
    port = free_port()
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(viewport={"width": 1440, "height": 1000})
        page = context.new_page()
        page.set_default_timeout(40_000)
        try:
            with run_app(transcript, data, extra_env={"AGENTDECK_SECRET": SECRET}, port=port) as url:
                page.goto(url)
                page.wait_for_selector("#chat")
                # The page has loaded its chats once the browser holds its identity.
                page.wait_for_function("Object.keys(localStorage).includes('agentdeck-browser')")
                send(page, "Set a variable please")
                wait_for_text(page, "The value is 42")
                wait_for_text(page, "Set a variable please", where="#chat-list")
                # Reload (same app): the chat comes back from disk.
                page.reload()
                page.wait_for_selector("#chat")
                wait_for_text(page, "Chat restored")
                assert "The value is 42" in chat_text(page) and "Set a variable please" in chat_text(page)

            write_transcript(transcript, AFTER_RESTART)  # the restarted app's model answers the follow-up
            with run_app(transcript, data, extra_env={"AGENTDECK_SECRET": SECRET}, port=port) as url:
                page.goto(url)
                page.wait_for_selector("#chat")
                wait_for_text(page, "Chat restored")
                text = chat_text(page)
                assert "Set a variable please" in text and "The value is 42" in text
                assert "Re-ran 2 recorded code steps" in text
                links = panel_links(page, "note.txt")
                assert any(href.endswith("note.txt") for href in links), links
                wait_for_text(page, "Set a variable please", where="#chat-list")
                send(page, "Add one to it")
                wait_for_text(page, "Now 43")  # the final answer used the rebuilt variable
                page.locator("#chat").get_by_text("Step 1", exact=False).last.click()  # this run's own step 1
                wait_for_text(page, "still 43", timeout=10)
                page.screenshot(path=str(tmp_path / "resumed.png"))
        finally:
            context.close()
            browser.close()
