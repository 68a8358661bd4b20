"""Edits and rejections in a real browser (Debian's Chromium + Playwright): a person edits a plan, code and a tool
call's arguments and rejects a plan with a reason; the chat shows what ran as the person's version and each
decision with both versions or its reason, live and again after a reload reopens the saved chat. The line under
the approval mode selector names the tools the mode pauses for.

One app process and one tab: the scenario is played in order (`play`: a test plays the parts it builds on that have
not run) and reads the replay script from start to end.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_driver import BROWSER_MARKS, chat_text, open_page, open_thought, send, wait_for_text
from test_ui_approvals_browser import choose_mode, edit_code, panel_hidden, plan
from ui_testlib import SCREENSHOT_DIR, code_reply, run_mail_app

pytestmark = BROWSER_MARKS

EDITED_CODE = "print(send_email(to='team@example.com', body='hi'))"
EDITED_ARGS = {"to": "bob@example.com", "body": "hello Bob"}
SCRIPT = [
    plan("1. Write to Eve."),
    code_reply("Send it.", "print(send_email(to='eve@example.com', body='hi'))"),
    code_reply("Done.", "final_answer('mail handled')"),
    plan("1. Delete every file."),
    code_reply("The person said no; nothing is deleted.", "final_answer('nothing deleted')"),
]
#: What the chat shows of the decisions without a click: their titles.
DECISION_TITLES = ["✋ Decision: edit", "✋ Decision: reject · Never delete files here."]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    secret = {"AGENTDECK_SECRET": "browser-edits-secret-0123456789abcdef"}
    with run_mail_app(tmp_path_factory.mktemp("edits"), SCRIPT, 6, secret) as (url, _), open_page(url) as page:
        page.wait_for_function("Object.keys(localStorage).includes('agentdeck-browser')")  # saved chats work
        yield page


@pytest.fixture(scope="module")
def done() -> set[str]:
    """The scenario's parts already played on the module's page: each test plays those it builds on that have not
    run (a test selected alone, `-k reopened`, found an empty chat before)."""
    return set()


def play(page, done: set[str], *parts: Callable[[Any], None]) -> None:
    for part in parts:
        if part.__name__ not in done:
            done.add(part.__name__)
            part(page)


def wait_for_value(page, selector: str, needle: str) -> None:
    page.wait_for_function("([s, n]) => { const e = document.querySelector(s); "
                           "return !!e && (e.value || e.innerText || '').includes(n); }", arg=[selector, needle])


def test_approval_mode_names_the_tools_it_pauses_for(page, done) -> None:
    play(page, done, mode_names_the_tools)


def test_edits_show_what_ran_and_both_versions(page, done) -> None:
    play(page, done, mode_names_the_tools, edits_show_what_ran)


def test_a_rejected_plan_shows_its_reason(page, done) -> None:
    play(page, done, mode_names_the_tools, edits_show_what_ran, rejected_plan_shows_its_reason)


def mode_names_the_tools(page) -> None:
    covers = page.locator("#approval-mode-covers")
    choose_mode(page, "Approve sensitive tool calls")
    wait_for_text(page, "web_search", where="#approval-mode-covers")
    text = covers.inner_text()
    assert "web_search (sends the query to DuckDuckGo)" in text and "visit_webpage" in text
    assert "send_email" not in text  # not chosen yet
    # Choose the mail tool: the line names it at once.
    page.locator("#settings").get_by_text("Agent settings").click()
    page.locator("#settings-tools").get_by_text("send_email", exact=False).click()
    wait_for_text(page, "send_email", where="#approval-mode-covers")
    page.locator("#settings").get_by_text("Agent settings").click()
    choose_mode(page, "Review plans")
    wait_for_text(page, "Pauses after each plan.", where="#approval-mode-covers")


def edits_show_what_ran(page) -> None:
    choose_mode(page, "Approve everything")
    send(page, "Email the team.")
    editor = page.locator("#plan-editor textarea")
    editor.wait_for(state="visible")
    wait_for_value(page, "#plan-editor textarea", "Write to Eve")
    editor.fill("1. Write to Bob.")
    page.locator("#plan-continue-btn").click()

    wait_for_value(page, "#edit-code", "eve@example.com")
    edit_code(page, EDITED_CODE)
    page.locator("#approve-btn").click()

    wait_for_value(page, "#edit-args textarea", "team@example.com")  # the call the edited code made
    page.locator("#edit-args textarea").fill(json.dumps(EDITED_ARGS))
    page.locator("#approve-btn").click()

    wait_for_value(page, "#edit-code", "mail handled")
    page.locator("#approve-btn").click()
    panel_hidden(page)
    wait_for_text(page, "success", where="#run-status")
    assert chat_text(page).count("✋ Decision: edit") == 3  # seen without a click

    open_thought(page, "Step 1")
    wait_for_text(page, "Edited by you before it ran")
    text = chat_text(page)
    assert EDITED_CODE in text and "eve@example.com" not in text  # the step shows the code that ran
    open_thought(page, "🛠️ send_email")
    wait_for_text(page, '"to": "bob@example.com"')
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT_DIR / "edited-step.png"))
    open_thought(page, "✋ Decision: edit", every=True)
    wait_for_text(page, "The agent's code (it did not run)")
    text = chat_text(page)
    assert "Your edited plan" in text and "Write to Bob." in text and "Write to Eve." in text  # lists: no "1."
    assert "print(send_email(to='eve@example.com', body='hi'))" in text  # the agent's version, kept
    assert "Your edited arguments" in text and "The agent's arguments (not used)" in text


def rejected_plan_shows_its_reason(page) -> None:
    send(page, "Clean up the workspace.")
    wait_for_value(page, "#plan-editor textarea", "Delete every file")
    page.locator("#plan-reject-reason textarea").fill("Never delete files here.")
    page.locator("#plan-reject-btn").click()
    wait_for_value(page, "#edit-code", "nothing deleted")  # the step after the rejected plan
    page.locator("#approve-btn").click()
    panel_hidden(page)
    wait_for_text(page, "success", where="#run-status")
    assert "✋ Decision: reject · Never delete files here." in chat_text(page)  # in the title: no click needed
    open_thought(page, "🧭 Plan")
    open_thought(page, "🚫 You rejected this plan")
    wait_for_text(page, "Reason: Never delete files here.")


def test_a_reopened_chat_shows_the_same_decisions(page, done) -> None:
    play(page, done, mode_names_the_tools, edits_show_what_ran, rejected_plan_shows_its_reason)
    live = chat_text(page)
    page.reload()
    page.wait_for_selector("#chat")
    wait_for_text(page, "Chat restored")
    reopened = chat_text(page)
    for title in DECISION_TITLES:
        assert reopened.count(title) == live.count(title) > 0, title
    assert reopened.count("✋ Decision: approve") == live.count("✋ Decision: approve")
    open_thought(page, "Step 1", every=True)  # each run has a Step 1 (steps are numbered within their run)
    wait_for_text(page, "Edited by you before it ran")
    assert EDITED_CODE in chat_text(page) and "eve@example.com" not in chat_text(page)
    open_thought(page, "✋ Decision: edit", every=True)
    wait_for_text(page, "The agent's code (it did not run)")
    text = chat_text(page)
    assert "Write to Eve." in text and '"to": "bob@example.com"' in text and "Your edited plan" in text
    open_thought(page, "🧭 Plan")
    open_thought(page, "🚫 You rejected this plan")
    wait_for_text(page, "Reason: Never delete files here.")
    page.screenshot(path=str(SCREENSHOT_DIR / "reopened-decisions.png"))
    assert Path(SCREENSHOT_DIR / "reopened-decisions.png").stat().st_size > 0
