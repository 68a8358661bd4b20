"""A decision pending when the server process stops survives it (issues 28 and 31): the app started again on the
same data folder (and port: localStorage is per origin) reopens the chat in a new page with the decision's panel
and buttons in view, and approving it runs the code and finishes the run; the status line beside the buttons says
the run waits."""
from __future__ import annotations

from pathlib import Path

import pytest
from browser_driver import BROWSER_MARKS, EVENT_COUNTER_JS, launch, send_for_approval, wait_for_text
from ui_testlib import code_reply, free_port, run_app, write_transcript

SECRET = "browser-test-secret-0123456789abcdef"
SCRIPT = [code_reply("Compute it.", "value = 6 * 7\nprint('ran after the restart')\nfinal_answer(f'value {value}')")]

pytestmark = BROWSER_MARKS


def test_a_pending_decision_survives_a_server_restart(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    expect = sync_api.expect
    transcript = write_transcript(tmp_path / "script.json", SCRIPT)
    data = tmp_path / "data"
    data.mkdir()
    port = free_port()
    env = {"AGENTDECK_SECRET": SECRET}
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        context.add_init_script(EVENT_COUNTER_JS)
        try:
            with run_app(transcript, data, extra_env=env, port=port) as url:
                page = context.new_page()
                page.set_default_timeout(40_000)
                page.goto(url)
                page.wait_for_selector("#chat")
                page.wait_for_function("Object.keys(localStorage).includes('agentdeck-browser')")
                send_for_approval(page, "Compute the value please")
                expect(page.locator("#approve-btn")).to_be_in_viewport(ratio=1.0, timeout=10_000)
                wait_for_text(page, "Compute the value please", where="#chat-list")
                page.close()
            # The server process has stopped with the decision pending; a new one starts on the same folder.
            with run_app(transcript, data, extra_env=env, port=port) as url:
                page = context.new_page()
                page.set_default_timeout(40_000)
                page.set_viewport_size({"width": 390, "height": 844})
                page.goto(url)
                page.wait_for_selector("#chat")
                wait_for_text(page, "Compute the value please")
                approve = page.locator("#approve-btn")
                approve.wait_for(state="visible")
                assert "ran after the restart" in page.locator("#edit-code").inner_text()
                # The status line beside the buttons says what the run waits for (it read "running · step 0/10 ·
                # 9.7 s": the saved memory records no paused step, and the chat rebuilt from it looked mid-run).
                status = page.locator("#run-status").inner_text()
                assert "✋ waiting for your decision (code) · step 1/" in status and "running" not in status, status
                expect(approve).to_be_in_viewport(ratio=1.0, timeout=10_000)
                expect(page.locator("#reject-btn")).to_be_in_viewport(ratio=1.0, timeout=10_000)
                approve.click()
                wait_for_text(page, "value 42")
                wait_for_text(page, "ran after the restart")
                page.screenshot(path=str(tmp_path / "after-restart.png"))
        finally:
            context.close()
            browser.close()
