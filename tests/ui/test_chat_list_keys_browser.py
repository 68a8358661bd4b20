"""The side list of chats by keyboard (issue 31, keyboard use): Tab reaches the list once, Up/Down and Left/Right
move the focus between chats without opening them, Enter or Space opens the chat focused, and the chat focused
shows an outline (ui/web/gradio_dom.py CHAT_LIST_KEYS_JS, ui/web/focus.py).

Found by hand at 1440x900: Gradio names each radio of the list alone, so the arrow keys moved nowhere (the focus
stayed on the first chat) and Tab stopped at every chat in turn.
"""
from __future__ import annotations

from pathlib import Path

import browser_driver as driver
import pytest
from browser_driver import BROWSER_MARKS, browser_context, open_tab, send, wait_for_text
from ui_testlib import code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS

SCRIPT = [code_reply("Answer.", "final_answer('the ' + 'answer')")]
CHATS = ("alpha", "bravo", "charlie")

#: The chat the focus is on: its row's text ('' when the focus is not on a chat of the list).
FOCUSED_CHAT = "() => { const e = document.activeElement; const row = e && e.closest('#chat-list label');" \
               " return row ? row.innerText : ''; }"
CHECKED = "() => [...document.querySelectorAll('#chat-list input')].filter(i => i.checked).length"
OUTLINE = "() => { const row = document.activeElement.closest('#chat-list label'); const s = getComputedStyle(row);" \
          " return [s.outlineStyle, parseFloat(s.outlineWidth)]; }"

#: The focused row's fill and its outline's colour (a fresh-eyes review saw the open chat's outline in its fill's
#: colour: computed, but nothing to see).
FILL_AND_OUTLINE = "() => { const row = document.activeElement.closest('#chat-list label');" \
                   " const s = getComputedStyle(row); return [s.backgroundColor, s.outlineColor]; }"


def rows(page) -> list[str]:
    return [label.inner_text() for label in page.locator("#chat-list label").all()]


def make_chats(page) -> None:
    """Three answered chats, then New chat: the list holds three chats and none is checked."""
    for i, name in enumerate(CHATS, start=1):
        send(page, f"Tell me the answer for {name}.")
        page.wait_for_function("(document.querySelector('#run-status') || {}).innerText?.startsWith('success')")
        page.locator("#new-chat-btn").click()
        page.wait_for_function("!(document.querySelector('#chat')?.innerText || '').includes('the answer')")
        page.wait_for_function("n => document.querySelectorAll('#chat-list label').length === n", arg=i)
    page.wait_for_function(f"() => ({CHECKED})() === 0 && window.adCompleted >= window.adJoined")


def message_of(row: str) -> str:
    """The message of the chat whose row in the list reads `row`."""
    return next(f"Tell me the answer for {name}." for name in CHATS if name in row)


def press(page, key: str) -> str:
    """Press `key` and say which chat the focus is on then."""
    page.keyboard.press(key)
    return page.evaluate(FOCUSED_CHAT)


def test_arrows_move_between_chats_and_enter_or_space_opens_one(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    (tmp_path / "data").mkdir()
    with run_app(write_transcript(tmp_path / "script.json", SCRIPT), tmp_path / "data") as url, \
            sync_api.sync_playwright() as playwright, browser_context(playwright) as context:
        page = open_tab(context, url)
        make_chats(page)
        first, second, third = rows(page)
        page.locator("#chat-search input, #chat-search textarea").first.focus()
        assert press(page, "Tab") == first  # Tab reaches the list
        style = page.evaluate(OUTLINE)
        assert style[0] == "solid" and style[1] >= 2, style  # and the chat focused shows it
        before = driver.server_events(page)
        assert [press(page, key) for key in ("ArrowDown", "ArrowDown", "ArrowDown", "ArrowUp", "ArrowRight",
                                             "ArrowLeft", "End", "Home", "ArrowDown")] \
            == [second, third, third, second, third, second, third, first, second]
        # Moving opened nothing: no chat checked, no server event, the chat shown still the new one
        assert page.evaluate(CHECKED) == 0 and driver.server_events(page) == before
        assert press(page, "Tab") == ""  # out of the list at once (one stop for the whole list) ...
        assert press(page, "Shift+Tab") == second  # ... and back on the chat the keys had reached

        press(page, "Enter")
        wait_for_text(page, message_of(second))
        page.wait_for_function("t => [...document.querySelectorAll('#chat-list label')]"
                               ".some(l => l.innerText === t && l.querySelector('input').checked)", arg=second)
        page.wait_for_function("() => window.adCompleted >= window.adJoined")
        # The list drawn again by the chat's opening keeps the focus on it, so the keys go on from there
        page.wait_for_function(f"t => ({FOCUSED_CHAT})() === t", arg=second)
        # The open chat's row is filled with the accent colour: its outline must differ from that fill to be seen
        colours = page.evaluate(FILL_AND_OUTLINE)
        assert colours[0] != colours[1], colours
        assert press(page, "ArrowUp") == first
        press(page, "Space")
        wait_for_text(page, message_of(first))
        page.wait_for_function("t => [...document.querySelectorAll('#chat-list label')]"
                               ".some(l => l.innerText === t && l.querySelector('input').checked)", arg=first)
