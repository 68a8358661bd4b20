"""A Stop is not a decision: two tabs show the same paused chat (issue 31), one presses ⏹ Stop; neither tab may say
"This decision was made in another tab: the run goes on" (ui/panels/answered_elsewhere.py ANSWERED_HERE), since
the run went nowhere: it stopped.

Found by hand (helper eyes2, 1440x900): after a Stop, a toast said the decision was made in another tab and the
run goes on, under a chat that says "Stopped": in the tab that stopped (2 of 2 tries by hand; this test's first-tab
case, 1 of 1) and in the other tab (2 of 2 by hand; not in this test's one run). The watch's stream leaves a stop
out (ui/panels/watch.py: `session.unfinished()`); the panel's timer (`AnsweredElsewhere.check`) tells whenever the
decision it shows no longer waits, answered or cancelled.

One app per test (each starts a fresh browser identity); the model is a replay script.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from browser_driver import BROWSER_MARKS, app_with_tabs, open_tab, send_for_approval, toasts
from ui_testlib import code_reply

from ui.panels.answered_elsewhere import ANSWERED_HERE, POLL_S

pytestmark = BROWSER_MARKS

SCRIPT = [code_reply("Delete the old files.", "print('deleted ' + 'everything')"),
          code_reply("Then only count them.", "print('counted ' + 'the files')\nfinal_answer('count' + 'ed')")]

STOPPED = "(document.querySelector('#run-status')?.innerText || '').startsWith('stopped')"


@pytest.mark.parametrize("stopping", ["first-tab", "watching-tab"])
def test_a_stop_is_not_announced_as_a_decision_made_in_another_tab(tmp_path: Path, stopping: str) -> None:
    with app_with_tabs(tmp_path, SCRIPT) as (url, context):
        first = open_tab(context, url)
        send_for_approval(first, "Tidy the folder.")
        second = open_tab(context, url)  # the first tab stays open: this one watches
        second.locator("#approve-btn").wait_for(state="visible")
        stopper = first if stopping == "first-tab" else second
        stopper.bring_to_front()
        stopper.locator("#stop-btn").click()
        for page in (first, second):
            page.bring_to_front()
            page.wait_for_function(STOPPED, timeout=30_000)
            page.locator("#approve-btn").wait_for(state="hidden")
        # An absence, so a window, not a condition: the panel's timer ticks every POLL_S while it shows a decision
        # and a late tick shows its toast. Waiting only until every started event had ended missed it in one of
        # two cases (the tick starts later); a few ticks' time caught both.
        first.wait_for_timeout(4 * POLL_S * 1000)
        told = {name: [t for t in toasts(page) if ANSWERED_HERE[:40] in t]
                for name, page in (("first", first), ("second", second))}
        assert told == {"first": [], "second": []}, f"a Stop was announced as a decision made elsewhere: {told}"
