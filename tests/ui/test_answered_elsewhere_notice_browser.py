"""Two tabs show the same paused chat (issue 31: a decision in reach wherever its chat is open): a decision answered
in one tab is announced in the other ("made in another tab", ui/panels/answered_elsewhere.py), also when the run
pauses again at once and the next decision reaches that tab first.

One app per test (each starts a fresh browser identity); the model is a replay script whose second step asks for a
decision as soon as the first is rejected.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from browser_driver import (
    BROWSER_MARKS,
    app_with_tabs,
    open_tab,
    send_for_approval,
    toasts,
    wait_for_text,
    wait_for_toast,
)
from ui_testlib import code_reply

from ui.panels.answered_elsewhere import ANSWERED_HERE

pytestmark = BROWSER_MARKS

#: Each step's output is built in its code, so a text waited for is the output, not the code shown in the panel.
SCRIPT = [code_reply("Delete the old files.", "print('deleted ' + 'everything')"),
          code_reply("Then only count them.", "print('counted ' + 'the files')\nfinal_answer('count' + 'ed')")]


def code_is(page, part: str) -> None:
    page.wait_for_function("s => (document.querySelector('#edit-code .cm-content')?.innerText || '').includes(s)",
                           arg=part, timeout=20_000)


@pytest.mark.parametrize("rejecting", ["first-tab", "watching-tab"])
def test_a_reject_in_one_tab_is_announced_in_the_other_as_the_next_decision_comes(tmp_path: Path,
                                                                                  rejecting: str) -> None:
    """The first tab sends; a second tab opened on the chat watches it (ui/panels/watch.py); one of them rejects
    the step, the run pauses at once at the next. The other tab tells the person the decision was made in another
    tab, and shows the next decision."""
    with app_with_tabs(tmp_path, SCRIPT) as (url, context):
        first = open_tab(context, url)
        send_for_approval(first, "Tidy the folder.")
        second = open_tab(context, url)  # the first tab stays open: this one watches
        code_is(second, "deleted")
        deciding, other = (first, second) if rejecting == "first-tab" else (second, first)
        deciding.bring_to_front()
        deciding.locator("#reject-btn").click()
        code_is(deciding, "counted")
        other.bring_to_front()
        code_is(other, "counted")  # the next decision reached the other tab
        wait_for_toast(other, ANSWERED_HERE[:40])
        assert not any(ANSWERED_HERE[:40] in text for text in toasts(deciding)), toasts(deciding)
        other.locator("#approve-btn").click()  # and its panel acts on the decision that waits now
        wait_for_text(other, "counted the files")
