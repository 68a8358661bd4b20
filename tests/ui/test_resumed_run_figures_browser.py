"""What a newcomer found with runs that end at a decision and resume (tests first written xfail on newbie38).

* The status line after a resumed run gave the last resumed piece's figures: "success · 2 steps · 0.0 s ·
  0 tokens" for a run whose steps used hundreds of tokens. The pending decision kept the model's reply but not its
  token usage, and the resumed run's duration started again; now the record keeps both
  (agents/decisions/pending.py `reply_input_tokens`, `reply_model_s`) and the run's clock adds the time before the
  pause (agents/loop/step_runner.py).
* A second tab answers the decision (it watches the chat, ui/panels/watch.py), but the first tab, which holds the
  chat, kept showing the old waiting step: its run had ended at the decision, so no stream was open to tell it. Now
  a tab showing a decision looks again while it does (ui/panels/answered_elsewhere.py) and follows the run.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from browser_driver import BROWSER_MARKS, EVENT_COUNTER_JS, choose_mode, launch, send, wait_for_text
from ui_testlib import code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS

SCRIPT = [
    code_reply("Print a line.", "x = 6 * 7\nprint('the first step ran', x)"),
    code_reply("Answer.", "final_answer(f'x is {x}')"),
]


@contextmanager
def _app_in_a_browser(tmp_path: Path) -> Iterator[tuple]:
    """The app on the script (at most 3 steps a run) and one browser context at 1440x900: (context, url)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    transcript = write_transcript(tmp_path / "script.json", SCRIPT)
    (tmp_path / "data").mkdir()
    with run_app(transcript, tmp_path / "data", extra_env={"AGENTDECK_MAX_STEPS": "3"}) as url, \
            sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(viewport={"width": 1440, "height": 900}, device_scale_factor=1)
        context.add_init_script(EVENT_COUNTER_JS)
        try:
            yield context, url
        finally:
            context.close()
            browser.close()


def _open(context, url: str, size: tuple[int, int] | None = None):
    page = context.new_page()
    page.set_default_timeout(30_000)
    if size is not None:  # before the page loads: a phone-sized page starts with its sidebar closed
        page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(url)
    page.wait_for_selector("#chat")
    page.wait_for_function("Object.keys(localStorage).includes('agentdeck-browser')")
    return page


def _code_is(page, part: str) -> None:
    page.wait_for_function("s => (document.querySelector('#edit-code .cm-content')?.innerText || '').includes(s)",
                           arg=part)


def test_a_resumed_run_counts_its_tokens(tmp_path: Path) -> None:
    with _app_in_a_browser(tmp_path) as (context, url):
        page = _open(context, url)
        choose_mode(page, "Approve each code step")
        send(page, "Compute x.")
        _code_is(page, "the first step ran")
        page.locator("#approve-btn").click()
        _code_is(page, "final_answer")
        page.locator("#approve-btn").click()
        wait_for_text(page, "x is 42")
        page.wait_for_function("(document.querySelector('#run-status')?.innerText || '').startsWith('success')")
        status = page.locator("#run-status").inner_text()
        assert not re.search(r"· 0 tokens", status), f"the run's steps used tokens, the status says: {status}"


def test_the_first_tab_sees_a_decision_answered_in_a_second_tab(tmp_path: Path) -> None:
    with _app_in_a_browser(tmp_path) as (context, url):
        first = _open(context, url)
        choose_mode(first, "Approve each code step")
        send(first, "Compute x.")
        _code_is(first, "the first step ran")
        second = _open(context, url, (390, 844))  # the same browser, a phone-sized tab: it watches the chat
        _code_is(second, "the first step ran")
        second.locator("#approve-btn").click()
        _code_is(second, "final_answer")
        wait_for_text(second, "the first step ran 42")
        # The first tab shows the approved step's output and the next decision, not the old waiting step.
        wait_for_text(first, "the first step ran 42", timeout=20)
        _code_is(first, "final_answer")
        # ... and its panel acts on the decision that waits now: the run ends, in both tabs.
        first.locator("#approve-btn").click()
        wait_for_text(first, "x is 42")
        wait_for_text(second, "x is 42")
        said = first.evaluate("document.querySelector('#approval-message')?.innerText || ''")
        assert "already made" not in said, said
