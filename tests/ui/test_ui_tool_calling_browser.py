"""Human in the loop with the tool-calling agent, in a real browser (Debian's Chromium + Playwright).

The other approval browser tests use the code agent, where a sensitive tool is called from sandboxed code.
Here the agent writes JSON tool calls: the person edits a call's arguments and approves it (the tool runs
with the edited arguments), then rejects the next call with a reason (the tool never runs and the reason
reaches the model, which answers accordingly). One app and one tab for the module; the tests run in order.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_driver import (
    BROWSER_MARKS,
    chat_text,
    open_page,
    send,
    server_events,
    wait_for_events,
    wait_for_text,
)
from ui_testlib import run_mail_app

pytestmark = BROWSER_MARKS



def call(name: str, **arguments) -> str:
    """A JSON action as the tool-calling agent's model writes it."""
    return "Action:\n" + json.dumps({"name": name, "arguments": arguments})


SCRIPT = [
    # 1. the call is edited, then approved: the tool runs with the edited arguments
    call("send_email", to="eve@example.com", body="hello"),
    call("final_answer", answer="mail handled"),
    # 2. the call is rejected with a reason
    call("send_email", to="mallory@example.com", body="the secret plans"),
    call("final_answer", answer="no mail to mallory"),
]


@pytest.fixture(scope="module")
def tool_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    with run_mail_app(tmp_path_factory.mktemp("tool-calling"), SCRIPT, max_steps=4) as app:
        yield app


@pytest.fixture(scope="module")
def page(tool_app):
    url, _ = tool_app
    with open_page(url) as page:
        yield page


def test_choose_the_tool_calling_agent_and_tool_approval(page) -> None:
    page.locator("#settings").get_by_text("Agent settings").click()
    page.locator("#settings-agent-type").get_by_text("tool-calling").click()
    page.locator("#settings-tools").get_by_text("send_email", exact=False).click()
    page.locator("#settings").get_by_text("Agent settings").click()
    before = server_events(page)
    page.locator("#approval-mode input").click()
    page.get_by_role("option", name="Approve sensitive tool calls").click()
    page.wait_for_function("() => document.querySelector('#approval-mode input').value === "
                           "'Approve sensitive tool calls'")
    wait_for_events(page, before, 1)  # the choices reached the server before the first message
    assert page.locator("#approval-panel").count() == 0


def test_edit_a_tool_call_and_approve_it(page, tool_app) -> None:
    _, outbox = tool_app
    send(page, "Email Eve to say hello.")
    args = page.locator("#edit-args textarea")
    args.wait_for(state="visible")
    assert json.loads(args.input_value()) == {"to": "eve@example.com", "body": "hello"}
    assert "send_email" in page.locator("#edit-tool-name").inner_text()
    wait_for_text(page, "waiting for you")
    assert not outbox.exists()  # shown, not run
    args.fill(json.dumps({"to": "bob@example.com", "body": "hello from the edited call"}))
    page.locator("#approve-btn").click()
    wait_for_text(page, "mail handled")
    page.locator("#approval-panel").wait_for(state="detached")
    assert outbox.read_text() == "bob@example.com: hello from the edited call\n"
    # Once the run ends its steps fold: the decision reads in its title, its versions one click away.
    decision = page.locator("#chat .thought-group .title", has_text="Decision: edit").first
    decision.wait_for(state="visible")
    # Folding slides the body out: it leaves the page when the slide ends.
    page.wait_for_function("() => !document.querySelector('#chat').innerText.includes('Your edited arguments')")
    decision.click()
    wait_for_text(page, "Your edited arguments")
    text = chat_text(page)
    assert "bob@example.com" in text and "The agent's arguments (not used)" in text


def test_reject_a_tool_call_with_a_reason(page, tool_app) -> None:
    _, outbox = tool_app
    send(page, "Send the plans to Mallory.")
    args = page.locator("#edit-args textarea")
    args.wait_for(state="visible")
    assert "mallory@example.com" in args.input_value()
    page.locator("#reject-reason textarea").fill("Mallory must never get the plans")
    page.locator("#reject-btn").click()
    wait_for_text(page, "no mail to mallory")
    page.locator("#approval-panel").wait_for(state="detached")
    text = chat_text(page)
    assert "Decision: reject" in text
    # The person's rejection, with their reason: not a failure (issue 19).
    assert "You rejected the call to send_email. Reason: Mallory must never get the plans" in text
    assert "send_email failed" not in text
    assert "mallory" not in outbox.read_text()  # only the earlier, approved mail was sent
