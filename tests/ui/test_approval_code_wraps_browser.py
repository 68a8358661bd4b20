"""On a 390x844 phone, the approval panel's code editor wraps long lines (issue 31 review): the code to approve is
read without scrolling sideways. Screenshot to SCREENSHOT_DIR."""
from __future__ import annotations

from pathlib import Path

import pytest
from browser_driver import (
    BROWSER_MARKS,
    EVENT_COUNTER_JS,
    launch,
    open_tab,
    send_for_approval,
    wait_for_text,
)
from ui_testlib import SCREENSHOT_DIR, code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS

LONG_LINE = ("summary = {'first': 'a fairly long value', 'second': 'another fairly long value', "
             "'third': 'and one more long value to read'}")
SCRIPT = [code_reply("Build a summary.", f"{LONG_LINE}\nfinal_answer('wra' + 'pped')")]


def test_long_code_lines_wrap_in_the_approval_editor_on_a_phone(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    (tmp_path / "data").mkdir()
    with run_app(write_transcript(tmp_path / "script.json", SCRIPT), tmp_path / "data") as url, \
            sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=1)
        context.add_init_script(EVENT_COUNTER_JS)
        page = open_tab(context, url)
        try:
            send_for_approval(page, "Summarise.")
            page.wait_for_function("() => (document.querySelector('#edit-code .cm-content')?.innerText || '')"
                                   ".includes('one more long value')")
            measured = page.evaluate("""() => {
                const scroller = document.querySelector('#edit-code .cm-scroller');
                const content = document.querySelector('#edit-code .cm-content');
                return {scroll: scroller.scrollWidth, width: scroller.clientWidth,
                        wrapping: content.classList.contains('cm-lineWrapping')};
            }""")
            SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOT_DIR / "phone-approval-code.png"))
            assert measured["wrapping"] and measured["scroll"] <= measured["width"] + 1, measured
            page.locator("#approve-btn").click()
            wait_for_text(page, "wrapped")
        finally:
            context.close()
            browser.close()
