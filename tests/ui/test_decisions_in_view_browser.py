"""A decision's buttons are on the screen when it waits (issue 31, item 4): a plan review and a code approval at
1440x900 and on a 390x844 phone, checked with Playwright's in-viewport test; ✏️ Edit's box is in view and is the
one box to type in while it is open (the message box is locked, so text meant as an edit never goes out as a new
message).
"""
from __future__ import annotations

from pathlib import Path

import pytest
from browser_driver import BROWSER_MARKS, EVENT_COUNTER_JS, choose_mode, launch, send, send_for_approval, wait_for_text
from ui_testlib import code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS

LONG_PLAN = "\n".join(f"{i}. Look at part {i} of the data and note what stands out there." for i in range(1, 13))
SCRIPT = [
    f"{LONG_PLAN}<end_plan>",
    code_reply("Follow the plan.", "final_answer('planned')"),
    "1. Compute.<end_plan>",
    code_reply("Compute it.", "x = 6 * 7\nprint('computed', x)\nfinal_answer(x)"),
    # The edited message's run: the same reply twice, so it ends with it whether or not that run plans first.
    code_reply("Edited.", "final_answer('the edited message ran')"),
    code_reply("Edited.", "final_answer('the edited message ran')"),
]


def in_view(page, selector: str) -> None:
    from playwright.sync_api import expect

    expect(page.locator(selector)).to_be_in_viewport(ratio=1.0, timeout=10_000)


@pytest.mark.parametrize("size", [(1440, 900), (390, 844)], ids=["desktop", "phone"])
def test_decision_buttons_and_the_edit_box_are_in_view(tmp_path: Path, size: tuple[int, int]) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    transcript = write_transcript(tmp_path / "script.json", SCRIPT)
    (tmp_path / "data").mkdir()
    width, height = size
    with run_app(transcript, tmp_path / "data", extra_env={"AGENTDECK_MAX_STEPS": "4"}) as url, \
            sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=1)
        context.add_init_script(EVENT_COUNTER_JS)
        page = context.new_page()
        page.set_default_timeout(30_000)
        try:
            page.goto(url)
            page.wait_for_selector("#chat")
            page.wait_for_function("Object.keys(localStorage).includes('agentdeck-browser')")
            choose_mode(page, "Review plans")
            send(page, "Look at the data, with a plan first.")
            page.locator("#plan-continue-btn").wait_for(state="visible")
            in_view(page, "#plan-continue-btn")
            in_view(page, "#plan-reject-btn")
            page.locator("#plan-continue-btn").click()
            wait_for_text(page, "planned")

            send_for_approval(page, "Compute it.")
            in_view(page, "#approve-btn")
            in_view(page, "#reject-btn")
            # What waits ("Step 1 · ✋ waiting for you", "✋ Waiting for your decision: …") fits its card, also
            # on a phone: nothing sticks out past the card's edge or the chat's, no spinner (a review's doubt).
            overflows = page.evaluate("""() => {
                const log = document.querySelector('#chat [role=log]').getBoundingClientRect();
                return [...document.querySelectorAll('#chat .thought-group .title')]
                    .filter(t => t.innerText.includes('aiting'))
                    .map(t => { const group = t.closest('.thought-group').getBoundingClientRect();
                                const box = t.getBoundingClientRect();
                                return {text: t.innerText, over: t.scrollWidth - t.clientWidth,
                                        right: Math.max(box.right - group.right, group.right - log.right),
                                        spinner: !!t.querySelector('.loading-spinner, [class*=spinner]')}; });
            }""")
            assert len(overflows) >= 2, overflows
            assert all(o["over"] <= 1 and o["right"] <= 1 and not o["spinner"] for o in overflows), overflows
            page.locator("#approve-btn").click()
            wait_for_text(page, "computed")
            page.locator("#approval-panel").wait_for(state="detached")

            choose_mode(page, "Autonomous: never pause")
            page.wait_for_function("!document.querySelector('#task-input textarea').disabled")
            page.locator("#edit-last-btn").click()
            page.locator("#edit-text textarea").wait_for(state="visible")
            in_view(page, "#edit-send-btn")
            # The message box is locked while the edit box is open: no second live box.
            page.wait_for_function("document.querySelector('#task-input textarea').disabled")
            page.locator("#edit-cancel-btn").click()
            page.locator("#edit-panel").wait_for(state="hidden")
            page.wait_for_function("!document.querySelector('#task-input textarea').disabled")
            page.locator("#edit-last-btn").click()
            page.locator("#edit-text textarea").fill("Compute it differently.")
            page.locator("#edit-send-btn").click()
            wait_for_text(page, "the edited message ran")
            page.wait_for_function("!document.querySelector('#task-input textarea').disabled")
        finally:
            context.close()
            browser.close()
