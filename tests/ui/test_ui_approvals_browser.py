"""Human in the loop in a real browser (Debian's Chromium + Playwright): plan review, code approval and
editing, a rejected tool call, an ask_user question, a rejected plan, and a reload while a decision waits.

One app process and one tab for the whole module: the tests run in order and share the session, so the
replay script below is read from start to end. Planning is on (an interval of 6 set in Agent settings: the
plan-review mode itself changes no setting), so every run starts with a plan. docs/screenshot-approval.png shows a
pending code approval.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_driver import (
    BROWSER_MARKS,
    chat_text,
    choose_mode,
    next_frames,
    open_page,
    open_thought,
    send,
    server_events,
    wait_for_events,
    wait_for_text,
    wait_in_view,
)
from ui_testlib import PENGUINS, SCREENSHOT_DIR, code_reply, run_mail_app

pytestmark = BROWSER_MARKS



def plan(text: str) -> str:
    return f"{text}<end_plan>"


SCRIPT = [
    # 1. plan review (edited)
    plan("1. Say hello.\n2. Finish."),
    code_reply("Follow the plan.", "print('following the plan')\nfinal_answer('planned and done')"),
    # 2. code approved as it is
    plan("1. Compute."),
    code_reply("Count the penguins by species.",
               "import pandas as pd\ndf = pd.read_csv('penguins.csv')\ncounts = df['species'].value_counts()\n"
               "print('approved code ran:', counts.to_dict())\nfinal_answer(int(counts.sum()))"),
    # 3. code edited
    plan("1. Compute again."),
    code_reply("Print something.", "print('original code ran')\nfinal_answer('original')"),
    # 4. tool call rejected with a reason
    plan("1. Send the mail."),
    code_reply("Send the email.", "send_email(to='eve@example.com', body='hello')"),
    code_reply("The user refused; do not send it.", "final_answer('no email sent')"),
    # 5. ask_user
    plan("1. Ask which colour."),
    code_reply("Ask the user.", "colour = ask_user('Which colour should the chart use?')\nprint('colour is', colour)"),
    code_reply("Done.", "final_answer(f'{colour} it is')"),
    # 6. plan rejected with a reason
    plan("1. Delete every file in the workspace."),
    code_reply("The person rejected that plan; nothing is deleted.", "final_answer('nothing deleted')"),
    # 7. reload while a decision waits
    plan("1. Print after the reload."),
    code_reply("Print.", "print('approved after the reload')\nfinal_answer('reloaded and done')"),
    # 8. Stop while a decision waits
    plan("1. Print, if allowed."),
    code_reply("Print.", "print('never approved')\nfinal_answer('should not run')"),
]


@pytest.fixture(scope="module")
def hitl_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    with run_mail_app(tmp_path_factory.mktemp("approvals"), SCRIPT, max_steps=6) as app:
        yield app


@pytest.fixture(scope="module")
def page(hitl_app):
    url, _ = hitl_app
    with open_page(url) as page:
        # The page's load has ended (it names the browser's owner): on a loaded machine the chat shows before
        # the rest, and a test that started then found no approval mode, and the module's script went out of step.
        page.wait_for_function("Object.keys(localStorage).includes('agentdeck-browser')")
        yield page


def edit_code(page, code: str) -> None:
    editor = page.locator("#edit-code .cm-content")
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(code)  # inserted as is: no auto-closed brackets or auto-indent


def open_last_step(page) -> None:
    """Open the last step of the chat (finished steps fold up; what they printed is in them, and under them)."""
    open_thought(page, re.compile(r"^Step \d+$"))


def panel_hidden(page, timeout: float = 30.0) -> None:
    page.locator("#approval-panel").wait_for(state="detached", timeout=timeout * 1000)


def test_settings_show_the_approval_mode_and_no_panel(page) -> None:
    page.locator("#approval-mode").wait_for(state="attached")
    assert page.locator("#approval-mode").count() == 1
    assert page.locator("#approval-panel").count() == 0  # hidden while nothing waits
    # The demo tool that needs approval is enabled for this session, and planning is on for every run (the
    # script below starts each run with a plan, whatever the approval mode).
    page.locator("#settings").get_by_text("Agent settings").click()
    page.locator("#settings-tools").get_by_text("send_email", exact=False).click()
    page.locator("#settings-planning input").fill("6")
    page.locator("#settings").get_by_text("Agent settings").click()


def test_edit_a_plan_and_continue(page) -> None:
    choose_mode(page, "Review plans")
    assert page.locator("#settings-planning input").input_value() == "6"  # the mode left the setting as it was
    send(page, "Say hello, with a plan first.")
    editor = page.locator("#plan-editor textarea")
    editor.wait_for(state="visible")
    assert editor.input_value() == "1. Say hello.\n2. Finish."
    wait_for_text(page, "waiting for you")
    editor.fill("1. Say hello LOUDLY.\n2. Finish.")
    page.locator("#plan-continue-btn").click()
    wait_for_text(page, "planned and done")
    panel_hidden(page)
    text = chat_text(page)
    assert "following the plan" in text and "waiting for you" not in text
    # The decision folds once the run ends (its body slides out); both versions are one click away.
    page.wait_for_function("() => !document.querySelector('#chat').innerText.includes('Your edited plan')")
    open_thought(page, "Decision: edit")
    wait_for_text(page, "Your edited plan")
    text = chat_text(page)
    assert "Say hello LOUDLY" in text and "The agent's plan" in text


def test_approve_a_code_step(page) -> None:
    choose_mode(page, "Approve each code step")
    send(page, "Count the penguins by species.", [PENGUINS])
    code = page.locator("#edit-code")
    code.wait_for(state="visible")
    assert "value_counts" in code.inner_text()
    wait_for_text(page, " · ✋ waiting for you")
    assert "approved code ran: {" not in chat_text(page)  # shown, not run yet
    assert "waiting for your decision" in page.locator("#run-status").inner_text()
    next_frames(page)  # the panel is drawn before the screenshot
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT_DIR / "screenshot-approval.png"))
    page.locator("#approve-btn").click()
    panel_hidden(page)
    wait_for_text(page, "✋ Decision: approve")
    wait_for_text(page, "344")  # the final answer the approved code computed
    open_last_step(page)
    wait_for_text(page, "approved code ran: {'Adelie': 152")


def test_edit_a_code_step_and_the_edited_code_runs(page) -> None:
    send(page, "Print something.")
    page.locator("#edit-code").wait_for(state="visible")
    wait_for_text(page, "original code ran')")  # the proposed code is shown, not run
    edit_code(page, "print('edited code ran'); final_answer('answer from the edited code')")
    page.locator("#approve-btn").click()
    panel_hidden(page)
    wait_for_text(page, "answer from the edited code")
    open_thought(page, "✋ Decision: edit")  # a decision folds once made
    wait_for_text(page, "Your edited code")
    open_last_step(page)
    wait_for_text(page, "edited code ran\n")
    assert "original code ran\n" not in chat_text(page)


def test_reject_a_tool_call_with_a_reason(page, hitl_app) -> None:
    _, outbox = hitl_app
    choose_mode(page, "Approve sensitive tool calls")
    send(page, "Email Eve.")
    args = page.locator("#edit-args textarea")
    args.wait_for(state="visible")
    assert "eve@example.com" in args.input_value()
    assert "send_email" in page.locator("#edit-tool-name").inner_text()
    # Broken JSON is refused with a message; the decision stays.
    args.fill('{"to": "bob@example.com", body: }')
    before = server_events(page)
    page.locator("#approve-btn").click()
    page.locator("#approval-message").get_by_text("not valid JSON").wait_for()
    wait_for_events(page, before, 3)  # the click, the resume and the panel refresh after it have all run
    next_frames(page)
    assert page.locator("#approval-message").is_visible()
    assert args.input_value() == '{"to": "bob@example.com", body: }'
    page.locator("#reject-reason textarea").fill("wrong recipient, never email Eve")
    page.locator("#reject-btn").click()
    wait_for_text(page, "no email sent")
    text = chat_text(page)
    assert "You rejected the call to send_email. Reason: wrong recipient, never email Eve" in text
    assert "send_email failed" not in text and "ExecutionError" not in text and "⚠️" not in text  # not an error
    assert not outbox.exists()


def test_answer_an_ask_user_question(page) -> None:
    choose_mode(page, "Autonomous: never pause")
    send(page, "Make a chart in a colour I like.")
    wait_for_text(page, "The agent asks: Which colour should the chart use?")
    page.locator("#question-card").wait_for(state="visible")
    placeholder = page.locator("#task-input textarea").get_attribute("placeholder")
    assert placeholder.startswith("Answer the agent's question")
    send(page, "teal")
    wait_for_text(page, "teal it is")
    assert chat_text(page).index("Which colour should") < chat_text(page).index("teal\n")  # question, then answer
    panel_hidden(page)


def test_reject_a_plan_with_a_reason(page) -> None:
    choose_mode(page, "Review plans")
    send(page, "Clean up the workspace.")
    editor = page.locator("#plan-editor textarea")
    editor.wait_for(state="visible")
    page.wait_for_function("() => document.querySelector('#plan-editor textarea').value.includes('Delete every file')",
                           timeout=15_000)
    wait_for_text(page, "waiting for you")
    page.locator("#plan-reject-reason textarea").fill("Never delete files here.")
    page.locator("#plan-reject-btn").click()
    wait_for_text(page, "nothing deleted")
    panel_hidden(page)
    open_thought(page, "✋ Decision: reject")  # a decision folds once made
    wait_for_text(page, "Never delete files here.")
    # The message box was locked while the resumed run streamed, and is given back at its end.
    page.wait_for_function("!document.querySelector('#task-input textarea').disabled", timeout=15_000)


def test_reload_keeps_the_pending_decision(page) -> None:
    choose_mode(page, "Approve each code step")
    send(page, "Print after a reload.")
    page.locator("#edit-code").wait_for(state="visible")
    page.reload()
    page.wait_for_selector("#chat")
    code = page.locator("#edit-code")
    code.wait_for(state="visible")
    assert "approved after the reload" in code.inner_text()
    wait_for_text(page, " · ✋ waiting for you")
    assert "teal it is" in chat_text(page)  # the earlier chat came back too
    assert page.locator("#approval-mode input").input_value() == "Approve each code step"
    # The settings form shows the session's settings again (planning on, the mail tool chosen), so a next
    # message keeps the agent instead of starting a new one.
    page.locator("#settings").get_by_text("Agent settings").click()
    assert page.locator("#settings-planning input").first.input_value() == "6"
    assert page.locator("#settings-tools label", has_text="send_email").locator("input").is_checked()
    page.locator("#settings").get_by_text("Agent settings").click()
    page.locator("#approve-btn").click()
    wait_for_text(page, "reloaded and done")
    assert "approved after the reload" in chat_text(page)
    panel_hidden(page)



def test_stop_while_a_decision_waits_shows_the_run_stopped(page) -> None:
    """The run paused at a decision has ended (nothing waits on the server): Stop drops the decision, and the page
    shows that end at once, as for a live run (before, only the status said "stopping…" and the chat kept
    saying it waited, the spinners turning, until a reload)."""
    choose_mode(page, "Approve each code step")
    send(page, "Print if I allow it.")
    page.locator("#edit-code").wait_for(state="visible")
    wait_for_text(page, " · ✋ waiting for you")
    # The person scrolled the chat up to read the code (a chat long enough to scroll: its view made short)...
    page.evaluate("""() => { const log = document.querySelector('#chat [role=log]');
                             log.style.maxHeight = '160px'; log.scrollTop = 0;
                             log.dispatchEvent(new Event('scroll')); }""")
    page.locator("#stop-btn").click()
    panel_hidden(page)
    # ...and after Stop the chat follows to its end, where the run's end is said (a review found it stayed up).
    wait_in_view(page, page.locator("#chat").get_by_text("Stopped. You can send a new message").last)
    page.wait_for_function("!(document.querySelector('#run-status')?.innerText || '').includes('stopping')",
                           timeout=30_000)
    assert "stopped" in page.locator("#run-status").inner_text().lower()
    page.wait_for_function("!(document.querySelector('#chat')?.innerText || '').includes('waiting for you')",
                           timeout=30_000)
    assert "never approved" not in chat_text(page)
    # Reopened (a reload opens the saved chat): the stopped step is still there, with its reply's tokens (before,
    # it was dropped with the request: "stopped · 0 steps · 0.0 s · 0 tokens").
    page.reload()
    page.wait_for_function("(document.querySelector('#run-status')?.innerText || '').includes('stopped')",
                           timeout=30_000)
    status = page.locator("#run-status").inner_text()
    assert "0 steps" not in status and " 0 tokens" not in status, status
