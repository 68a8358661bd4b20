"""At 390x844 (a phone), nothing is wider than the screen while a run goes on (issue 31, newcomer 4: the running
indicator's spinner overflowed its box and the viewport). Screenshot to SCREENSHOT_DIR."""
from __future__ import annotations

from pathlib import Path

import pytest
from browser_driver import BROWSER_MARKS, EVENT_COUNTER_JS, launch, send, wait_for_text
from ui_testlib import SCREENSHOT_DIR, code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS

SCRIPT = [
    code_reply("Take a while.", "import time\nopen('started.txt', 'w').write('x')\nprint('working')\n"
                                "time.sleep(6)\nprint('done waiting')"),
    code_reply("Done.", "final_answer('finished the slow step')"),
]

#: Elements (visible, with a box) whose right edge passes the viewport, and the page's own scroll width.
OVERFLOW_JS = """() => {
    const width = window.innerWidth;
    const wide = [...document.querySelectorAll('body *')].filter(e => {
        const r = e.getBoundingClientRect(), s = getComputedStyle(e);
        return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && r.right > width + 1
            && !e.closest('[aria-hidden=true]') && !e.closest('.ad-offscreen');
    }).map(e => `${e.tagName.toLowerCase()}#${e.id}.${String(e.className).slice(0, 60)} `
        + `right=${Math.round(e.getBoundingClientRect().right)}`);
    const spill = [...document.querySelectorAll('[class*=spinner], [class*=loader], [class*=pending], .ad-running')]
        .filter(e => { const r = e.getBoundingClientRect(), p = e.parentElement?.getBoundingClientRect();
                       return r.width > 0 && p && (r.right > p.right + 1 || r.left < p.left - 1); })
        .map(e => `${e.tagName.toLowerCase()}.${String(e.className).slice(0, 60)}`);
    return {scroll: document.documentElement.scrollWidth, width, wide: wide.slice(0, 15), spill};
}"""


def test_nothing_is_wider_than_a_phone_during_a_run(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    (tmp_path / "data").mkdir()
    with run_app(write_transcript(tmp_path / "script.json", SCRIPT), tmp_path / "data") as url, \
            sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=1)
        context.add_init_script(EVENT_COUNTER_JS)
        page = context.new_page()
        page.set_default_timeout(30_000)
        try:
            page.goto(url)
            page.wait_for_selector("#chat")
            send(page, "Do the slow thing")
            wait_for_text(page, "working")  # the step is running now (it sleeps 6 s)
            page.wait_for_function("() => document.querySelector('.ad-running, .progress-text, .eta-bar, "
                                   ".generating, .pending, [class*=spinner], .loader')")
            measured = page.evaluate(OVERFLOW_JS)
            SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOT_DIR / "phone-during-run.png"))
            assert measured["scroll"] <= measured["width"] and not measured["wide"], measured
            assert not measured["spill"], measured  # an indicator wider than its own box
            wait_for_text(page, "finished the slow step")
        finally:
            context.close()
            browser.close()
