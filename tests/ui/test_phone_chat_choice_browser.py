"""On a phone the chats' sidebar covers the page: a chat chosen in it is shown, the sidebar closing (issue 31,
phone layout). On a wide screen the sidebar stays open beside the chat.

Found by hand at 390x844: after a tap on a chat in the list the sidebar stayed over the whole screen and the
chat opened behind it could not be seen until its small toggle was found (1 of 1).
"""
from __future__ import annotations

from pathlib import Path

import browser_driver as driver
import pytest
from browser_driver import BROWSER_MARKS, browser_context, open_tab, send, wait_for_text
from ui_testlib import code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS

SCRIPT = [code_reply("Answer.", "final_answer('the ' + 'answer')")]


def answer_then_new_chat(page) -> None:
    """A chat answered, then New chat: the list holds that one chat, the chat shown is empty. The run's end is
    waited for (its "success"), not "the answer", which the message holds too: New chat stops a running run."""
    send(page, "Tell me the answer, please.")
    page.wait_for_function("(document.querySelector('#run-status') || {}).innerText?.startsWith('success')")
    page.locator("#new-chat-btn").click()
    page.wait_for_function("!(document.querySelector('#chat')?.innerText || '').includes('the answer')")
    page.wait_for_function("() => document.querySelectorAll('#chat-list label').length === 1")


SIDEBAR_OPEN = "() => document.querySelector('#history-sidebar').classList.contains('open')"


@pytest.mark.parametrize("width, height, stays_open", [(390, 844, False), (1440, 900, True)],
                         ids=["phone", "wide"])
def test_a_chat_chosen_in_the_sidebar_is_in_view(tmp_path: Path, width: int, height: int,
                                                 stays_open: bool) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    (tmp_path / "data").mkdir()
    with run_app(write_transcript(tmp_path / "script.json", SCRIPT), tmp_path / "data") as url, \
            sync_api.sync_playwright() as playwright, browser_context(playwright, width, height) as context:
        page = open_tab(context, url)
        answer_then_new_chat(page)
        if not page.evaluate(SIDEBAR_OPEN):
            page.locator("#history-sidebar button.toggle-button").click()
            page.wait_for_function(SIDEBAR_OPEN)
        page.locator("#chat-list label").first.click()
        wait_for_text(page, "the answer")
        if stays_open:
            assert page.evaluate(SIDEBAR_OPEN)
        else:
            page.wait_for_function(f"() => !({SIDEBAR_OPEN})()", timeout=10_000)
        from playwright.sync_api import expect
        expect(page.locator("#chat")).to_be_in_viewport(timeout=10_000)


@pytest.mark.parametrize("how", ["click", "space"])
def test_a_chat_left_checked_in_the_list_opens_on_a_click(tmp_path: Path, how: str) -> None:
    """The list's updates come from events that end in any order: one computed before New chat (the run's
    refresh) can land after it and leave the chat just left checked while the new chat shows. A click on a
    checked radio sends no choice, so going back to that chat did nothing (a full run's failure of the test
    above, 5 of 8 on a loaded machine). Here the chat is checked again in the page, as that late update does,
    then chosen with the mouse or with Space."""
    sync_api = pytest.importorskip("playwright.sync_api")
    (tmp_path / "data").mkdir()
    with run_app(write_transcript(tmp_path / "script.json", SCRIPT), tmp_path / "data") as url, \
            sync_api.sync_playwright() as playwright, browser_context(playwright) as context:
        page = open_tab(context, url)
        answer_then_new_chat(page)
        page.wait_for_function("() => !document.querySelector('#chat-list input').checked")  # New chat's own update
        page.evaluate("document.querySelector('#chat-list input').checked = true")
        if how == "click":
            page.locator("#chat-list label").first.click()
        else:  # the keyboard's way: Space on the chat's radio
            page.locator("#chat-list input").first.focus()
            page.keyboard.press("Space")
        wait_for_text(page, "the answer")
        assert page.evaluate("document.querySelector('#chat-list input').checked")
        # The chat open, clicked again, stays shown and usable (that it is not rebuilt is
        # test_ui_persistence.py::test_the_chat_open_in_the_tab_clicked_in_the_list_stays_as_it_is).
        page.wait_for_function("!document.querySelector('#task-input textarea').disabled")
        before = driver.server_events(page)
        page.locator("#chat-list label").first.click()
        driver.wait_for_events(page, before, 1)
        wait_for_text(page, "the answer")
        assert page.evaluate("document.querySelector('#chat-list input').checked")
        page.wait_for_function("!document.querySelector('#task-input textarea').disabled")
