"""A tab watching a run that goes on in another open tab (issue 31, item 7; ui/panels/watch.py), in Chromium:
with the decision panel open its ⏹ Stop is on the screen with the panel's buttons, at 1440x900 and on a 390x844
phone (it was at y≈981 and ≈845, below the fold); its status line gives the run's time as the running tab's does
(it showed the time its page load read, a second and more behind, until its own stream began).

One app per test (each starts a fresh browser identity); the model is a replay script whose first step waits in the
sandbox for the test's go (test_decisions_reach_browser.py's gate), so the second tab opens while the run goes on.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
from browser_driver import BROWSER_MARKS, browser_context, open_tab, send, send_for_approval, wait_for_text
from test_decisions_in_view_browser import in_view
from test_decisions_reach_browser import GATED_SCRIPT, GATED_THEN_DECIDE, open_gate
from ui_testlib import run_app, write_transcript

pytestmark = BROWSER_MARKS


@pytest.mark.parametrize("size", [(1440, 900), (390, 844)], ids=["desktop", "phone"])
def test_stop_is_in_view_in_a_watching_tab_with_the_decision_panel_open(tmp_path: Path, size: tuple[int, int]) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    transcript = write_transcript(tmp_path / "script.json", GATED_THEN_DECIDE)
    (tmp_path / "data").mkdir()
    width, height = size
    with run_app(transcript, tmp_path / "data") as url, sync_api.sync_playwright() as playwright:
        with browser_context(playwright, width, height) as context:
            first = open_tab(context, url)
            send_for_approval(first, "Load the data and count its rows.")
            first.locator("#approve-btn").click()
            wait_for_text(first, "loading")  # the approved step runs, held at its gate
            second = open_tab(context, url)  # the first tab stays open: this one watches
            wait_for_text(second, "loading")
            second.wait_for_function("document.querySelector('#task-input textarea').disabled")  # read-only
            open_gate(tmp_path / "data")
            second.locator("#approve-btn").wait_for(state="visible", timeout=20_000)
            for button in ("#approve-btn", "#reject-btn", "#stop-btn"):
                in_view(second, button)
            second.locator("#stop-btn").click()  # and it works from there
            wait_for_text(second, "Stopped")


#: The run's start its status line counts from (from the run's events, in its `ad-since-<ms>` class), once shown.
RUN_SINCE_JS = """() => {
    const line = document.querySelector('#run-status .ad-elapsed');
    const since = line && [...line.classList].find(c => c.startsWith('ad-since-'));
    return since ? parseInt(since.slice('ad-since-'.length), 10) / 1000 : 0;
}"""


#: The status line as the page counts it at the moment `at` (seconds since the epoch) of the browser's clock.
LINE_AT_JS = """at => {
    const clock = Date.now;
    Date.now = () => at * 1000;
    try {  // the line's own text: Gradio's progress note ("processing | 0.1/0.2s") may sit above it while it updates
        window.adTickElapsed();
        return document.querySelector('#run-status').innerText.split('\\n').filter(l => l.trim()).pop();
    }
    finally { Date.now = clock; }
}"""


def test_a_watching_tab_gives_the_run_s_time_as_the_running_tab_does(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    transcript = write_transcript(tmp_path / "script.json", GATED_SCRIPT)
    (tmp_path / "data").mkdir()
    with run_app(transcript, tmp_path / "data") as url, sync_api.sync_playwright() as playwright:
        with browser_context(playwright) as context:
            first = open_tab(context, url)
            send(first, "Take your time.")
            wait_for_text(first, "working")  # the step waits at its gate: the run goes on
            second = open_tab(context, url)  # the first tab stays open: this one watches
            wait_for_text(second, "working")
            second.wait_for_function("document.querySelector('#task-input textarea').disabled")  # read-only
            tabs = (first, second)
            for tab in tabs:
                tab.wait_for_function(f"({RUN_SINCE_JS})() > 0")
                # A loaded machine delivers a line late: a tab counts on its own clock once one line came within
                # 2 s of being made (the heartbeat brings one a second); until then it takes the lateness as skew.
                tab.wait_for_function("Math.abs(window.adClockLeast()) <= 2", timeout=60_000)
            starts = {tab.evaluate(RUN_SINCE_JS) for tab in tabs}
            assert len(starts) == 1, starts  # both count from the run's start in its events
            # Both tabs' lines counted at the same moment, a whole number of seconds and 0.34 into the run (the last
            # one, the browser's clock as the server's): both say that time, whenever their last update came.
            since = starts.pop()
            seconds = math.floor(time.time() - since)
            shown = [tab.evaluate(LINE_AT_JS, since + seconds + 0.34) for tab in tabs]
            assert all(line.startswith("running · step 1/") and line.endswith(f" · {seconds}.3 s")
                       for line in shown), (seconds, shown)
            open_gate(tmp_path / "data")
            wait_for_text(second, "finished while you were away", timeout=40)
