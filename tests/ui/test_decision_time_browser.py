"""A decision's time, as the chat shows it ("✋ Decision: approve (N s)"), is from when its panel could be seen to
the click (issue 31 review: it counted from the agent's request, before the run's end reached the page, to the
resumed run's start, about a second more than a person counts)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from browser_driver import BROWSER_MARKS, EVENT_COUNTER_JS, choose_mode, launch, send, wait_for_text
from ui_testlib import code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS

SCRIPT = [code_reply("Print.", "print('hi there')\nfinal_answer('gree' + 'ted')")]

#: When the Approve button was first on the screen, in the page's clock (checked every frame).
SHOWN_AT_JS = """() => { window.adShownAt = 0; const look = () => { const b = document.querySelector('#approve-btn');
    if (b && b.offsetParent !== null && !window.adShownAt) window.adShownAt = performance.now();
    if (!window.adShownAt) requestAnimationFrame(look); }; look(); }"""


def test_a_decisions_time_is_from_its_panel_shown_to_the_click(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    (tmp_path / "data").mkdir()
    with run_app(write_transcript(tmp_path / "script.json", SCRIPT), tmp_path / "data") as url, \
            sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        context.add_init_script(EVENT_COUNTER_JS)
        page = context.new_page()
        page.set_default_timeout(30_000)
        try:
            page.goto(url)
            page.wait_for_selector("#chat")
            page.wait_for_function("Object.keys(localStorage).includes('agentdeck-browser')")
            choose_mode(page, "Approve each code step")
            page.evaluate(SHOWN_AT_JS)
            send(page, "Greet me")
            page.wait_for_function("() => window.adShownAt > 0")
            # The person reads for two seconds, then clicks: the click's time in the page's clock.
            page.wait_for_function("() => performance.now() - window.adShownAt >= 2000", polling=50)
            clicked = page.evaluate("""() => { const at = performance.now();
                document.querySelector('#approve-btn').click(); return at; }""")
            counted = (clicked - page.evaluate("window.adShownAt")) / 1000
            wait_for_text(page, "greeted")
            shown = page.locator("#chat").inner_text()
            found = re.search(r"Decision: approve\s*\((\d+(?:\.\d+)?)s\)", shown)
            assert found, shown
            # The chat's time rounds to a tenth; the click reaches the server a moment after it is made.
            assert abs(float(found.group(1)) - counted) <= 0.3, (found.group(0), counted)
        finally:
            context.close()
            browser.close()
