"""A newcomer's review of the decisions and the step view in Chromium (issue 31): what a person sees when a tab
is opened on a chat whose run goes on between two decisions, and the wording and layout around decisions.

One app per test; the model is a replay script.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from browser_driver import BROWSER_MARKS, EVENT_COUNTER_JS, choose_mode, launch, send, wait_for_text
from ui_testlib import code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS

#: Step 1 (once approved) waits inside the sandbox for the test's go.txt, so a second tab is opened while the
#: approved step runs, before the next decision is asked; step 2 then waits for a decision.
GATED_THEN_DECIDE = [
    code_reply("Load the data.", "import time\nprint('loading', flush=True)\nwaited = 0.0\n"
                                 "while waited < 90:\n    try:\n        open('go.txt').close()\n        break\n"
                                 "    except FileNotFoundError:\n        time.sleep(0.05)\n        waited += 0.05\n"
                                 "print('loaded')"),
    code_reply("Count the rows.", "print('counted ' + 'rows')\nfinal_answer('count' + 'ed')"),
]


def new_tab(context, url: str):
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.goto(url)
    page.wait_for_selector("#chat")
    page.wait_for_function("Object.keys(localStorage).includes('agentdeck-browser')")
    return page


def open_gate(data: Path) -> None:
    workspaces = list(data.glob("owners/*/*/workspace"))
    assert len(workspaces) == 1, workspaces
    (workspaces[0] / "go.txt").write_text("go", encoding="utf-8")


def test_a_tab_opened_while_an_approved_step_runs_shows_the_next_decision(tmp_path: Path) -> None:
    """A tab opened on the chat while the step just approved still runs follows the run, and when the next step
    waits for a decision it shows the panel with its buttons (the chat says "in the panel below the chat").
    Without ui/panels/watch.py's panel updates it showed no panel (6 of 6 by hand, 2 of 2 here)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    transcript = write_transcript(tmp_path / "script.json", GATED_THEN_DECIDE)
    (tmp_path / "data").mkdir()
    with run_app(transcript, tmp_path / "data") as url, sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        context.add_init_script(EVENT_COUNTER_JS)
        try:
            first = new_tab(context, url)
            choose_mode(first, "Approve each code step")
            send(first, "Load the data and count its rows.")
            first.locator("#approve-btn").wait_for(state="visible")
            first.locator("#approve-btn").click()
            wait_for_text(first, "loading")  # the approved step runs, held at its gate
            second = new_tab(context, url)
            wait_for_text(second, "loading")
            open_gate(tmp_path / "data")
            wait_for_text(second, "Waiting for your decision")
            second.locator("#approve-btn").wait_for(state="visible", timeout=20_000)
            assert "counted" in second.locator("#edit-code").inner_text()
            second.locator("#approve-btn").click()
            wait_for_text(second, "counted rows")  # its output (the code says "counted " + "rows")
        finally:
            context.close()
            browser.close()
