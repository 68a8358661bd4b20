"""A tab whose chat another tab took is told so at once (issue 31; ui/panels/chat_taken.py): tab A shows a chat,
tab B opens it and continues it; within seconds A says the chat continues elsewhere, its message box is locked
(a message from it would be refused, ui/session/lease.py) and Take over here loads the chat as it is now, which
then tells B the same.

One app per test (each starts a fresh browser identity); the model is a replay script.
"""
from __future__ import annotations

import time
from pathlib import Path

from browser_driver import (
    BROWSER_MARKS,
    app_with_tabs,
    open_tab,
    send,
    wait_for_text,
    wait_for_toast,
)
from ui_testlib import code_reply

from ui.session.lease import TAKEN, TAKEN_PLACEHOLDER

pytestmark = BROWSER_MARKS

#: Each tab's agent replays the script from its start; the answer counts the runs in the chat's sandbox (rebuilt
#: when a tab opens the chat), so the text waited for is that run's answer, not the code shown before it runs.
SCRIPT = [code_reply("Count.", "try:\n    runs += 1\nexcept NameError:\n    runs = 1\n"
                                   "final_answer(f'answer number {runs}')")]

BOX_LOCKED_JS = "document.querySelector('#task-input textarea')?.disabled === true"


def test_a_tab_whose_chat_another_tab_continues_is_told_and_offered_to_take_it_back(tmp_path: Path) -> None:
    with app_with_tabs(tmp_path, SCRIPT) as (url, context):
        first = open_tab(context, url)
        send(first, "Answer me.")
        wait_for_text(first, "answer number 1")
        second = open_tab(context, url)  # opens the chat the browser had open: it continues it from here
        wait_for_text(second, "answer number 1")
        send(second, "And go on.")
        wait_for_text(second, "answer number 2")
        continued = time.monotonic()
        first.bring_to_front()
        # Within a couple of seconds (the tick is a second; a loaded machine takes longer to draw it).
        wait_for_toast(first, TAKEN[:40], timeout=10)
        told_after = time.monotonic() - continued
        wait_for_text(first, TAKEN[:40])  # the chat says so too (it stays after the toast)
        first.wait_for_function(BOX_LOCKED_JS)  # nothing typed here is sent to be refused
        assert first.locator("#task-input textarea").get_attribute("placeholder") == TAKEN_PLACEHOLDER
        first.locator("#take-over-btn").click()  # offered: the chat as it is now, continued here
        wait_for_text(first, "answer number 2")
        first.wait_for_function(f"!({BOX_LOCKED_JS})")
        second.bring_to_front()
        wait_for_toast(second, TAKEN[:40], timeout=10)  # and the tab that had it is told in turn
        second.wait_for_function(BOX_LOCKED_JS)
        # The offer goes with the chat taken: a new chat here is nobody else's (it stayed under it before)
        second.locator("#take-over-btn").wait_for(state="visible")
        second.locator("#new-chat-btn").click()
        second.locator("#take-over-btn").wait_for(state="hidden")
        print(f"the first tab was told {told_after:.1f} s after the second tab's answer was shown")
