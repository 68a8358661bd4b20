"""A decision's time, as the chat shows it ("✋ Decision: approve (N s)"), is from when its panel was shown to the
click (issue 31 review: 3.4 s shown for 2.0 s between the panel and the click). It counted from the agent's
request, made before the paused run's end reached the page, to the resumed run reaching the request.

No stopwatch here (a test that compared the page's clock with the server's flaked under load): the server
records when the panel's refresh showed the request and when the click was taken, and the test checks that the
saved decision counts from that showing and that the chat shows that count.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from browser_driver import BROWSER_MARKS, browser_context, choose_mode, open_tab, send, wait_for_text
from ui_testlib import code_reply, run_app, write_transcript

from tests.waiting import wait_until
from ui.saved.store import ChatStore

pytestmark = BROWSER_MARKS

SECRET = "browser-decision-time-secret-0123456789"
SCRIPT = [code_reply("Print.", "print('hi there')\nfinal_answer('gree' + 'ted')")]
#: The decision's title bar as the page shows it: Gradio adds the duration (to a tenth of a second) below it.
SHOWN_TIME = re.compile(r"Decision: approve\s*\((\d+(?:\.\d+)?)s\)")


def _decision_record(data: Path) -> dict:
    """The code decision of the one saved chat, once the run's end is on disk."""
    metas = sorted(data.glob("owners/*/*/meta.json"))
    assert len(metas) == 1, metas
    store = ChatStore(data, secret=SECRET.encode())
    chat = store.get(metas[0].parent.parent.name, metas[0].parent.name)
    assert chat is not None

    def finished() -> dict | None:
        memory = store.load_memory(chat)[0]
        if memory.pending is not None or not any(s.step_type == "final_answer" for s in memory.steps):
            return None
        return next(r for s in memory.action_steps() for r in s.decisions if r["kind"] == "code")

    return wait_until(finished, what="the run's end on disk")


def test_a_decisions_time_is_from_its_panel_shown_to_the_click(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    data = tmp_path / "data"
    data.mkdir()
    with run_app(write_transcript(tmp_path / "script.json", SCRIPT), data, extra_env={"AGENTDECK_SECRET": SECRET}) \
            as url, sync_api.sync_playwright() as playwright:
        with browser_context(playwright) as context:
            page = open_tab(context, url)
            choose_mode(page, "Approve each code step")
            send(page, "Greet me")
            approve = page.locator("#approve-btn")
            approve.wait_for(state="visible")
            approve.click()
            wait_for_text(page, "greeted")
            record = _decision_record(data)
            # The request's time is as it was; the showing is the panel's, after it; the decision is the click's.
            assert 0 < record["asked_at"] < record.get("shown_at", 0.0) <= record["decided_at"], record
            assert record["waited_s"] == record["decided_at"] - record["shown_at"]
            shown = wait_until(lambda: SHOWN_TIME.search(page.locator("#chat").inner_text()),
                               what="the decision's time in the chat")
            # what the decision recorded, as the page rounds it (a tenth of a second)
            assert abs(float(shown.group(1)) - round(record["waited_s"], 2)) <= 0.05 + 1e-9, (shown.group(0), record)
