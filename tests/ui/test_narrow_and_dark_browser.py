"""The app at 390 px (a phone) and in dark mode, in Chromium: the chats sidebar starts closed on narrow
screens (open on wide ones), a run works, a pending approval and the step it asks about share the screen, and
dark mode keeps text readable. Screenshots go to SCREENSHOT_DIR."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from browser_driver import (
    BROWSER_MARKS,
    EVENT_COUNTER_JS,
    chat_text,
    choose_mode,
    launch,
    next_frames,
    send,
    wait_for_text,
)
from ui_testlib import SCREENSHOT_DIR, code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS

SCRIPT = [
    code_reply("Count the rows.", "rows = [('Oslo', 4), ('Cairo', 30), ('Lisbon', 21)]\n"
                                  "for city, temp in rows:\n    print(city, temp)"),
    code_reply("Done.", "final_answer(f'The warmest city is {max(rows, key=lambda r: r[1])[0]}.')"),
]


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("narrow-dark")
    (base / "data").mkdir()
    with run_app(write_transcript(base / "script.json", SCRIPT), base / "data") as url:
        yield url


@contextmanager
def page_at(url: str, width: int, height: int) -> Iterator:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=1)
        context.add_init_script(EVENT_COUNTER_JS)  # choose_mode waits for the choice to reach the server
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.goto(url)
        page.wait_for_selector("#chat")
        page.wait_for_function("document.documentElement.classList.contains('ad-sidebar-settled')")
        try:
            yield page
        finally:
            context.close()
            browser.close()


def shot(page, name: str) -> None:
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT_DIR / f"screenshot-{name}.png"))


def sidebar_open(page) -> bool:
    return page.locator("#history-sidebar").evaluate("s => s.classList.contains('open')")


def luminance(page, selector: str, prop: str) -> float:
    """Relative luminance (0 black .. 1 white) of a computed colour of the first element matching `selector`."""
    return page.evaluate("""([selector, prop]) => {
        let el = document.querySelector(selector), value = getComputedStyle(el)[prop];
        while (prop === 'backgroundColor' && /rgba\\(0, 0, 0, 0\\)|transparent/.test(value) && el.parentElement) {
            el = el.parentElement; value = getComputedStyle(el)[prop];
        }
        const [r, g, b] = value.match(/[\\d.]+/g).slice(0, 3).map(Number).map(c => {
            c /= 255; return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    }""", [selector, prop])


def contrast(page, selector: str) -> float:
    text, back = luminance(page, selector, "color"), luminance(page, selector, "backgroundColor")
    light, dark = max(text, back), min(text, back)
    return (light + 0.05) / (dark + 0.05)


def test_phone_width_starts_with_the_sidebar_closed_and_runs(app_url: str) -> None:
    with page_at(app_url, 390, 844) as page:
        assert not sidebar_open(page)
        box = page.locator("#task-input").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390 + 1  # the message box is in view
        send(page, "Which city is warmest?")
        wait_for_text(page, "The warmest city is Cairo.")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390 + 1  # nothing wider than the screen
        shot(page, "phone")
        page.locator("#history-sidebar button.toggle-button").click()  # the chevron still opens the chats
        page.wait_for_function("document.querySelector('#history-sidebar').classList.contains('open')")


def test_phone_shows_a_pending_approval_and_its_step_together(app_url: str) -> None:
    """At 390x844 the approval panel leaves room for the chat: the step whose code waits is on screen above the
    panel, its Approve button too, the code editor scrolls inside a bounded box, and nothing is wider than the
    screen."""
    with page_at(app_url, 390, 844) as page:
        choose_mode(page, "Approve each code step")  # a choice made before the page load ends is kept
        send(page, "Which city is warmest?")
        page.locator("#edit-code").wait_for(state="visible")
        wait_for_text(page, " · ✋ waiting for you")
        approve = page.locator("#approve-btn")
        approve.scroll_into_view_if_needed()  # reachable (the page scrolls it into view itself on a phone)
        # The chat lays out the waiting step's body after its header: measure once that has happened.
        page.wait_for_function("[...document.querySelectorAll('#chat .content')].some("
                               "c => c.innerText.includes('for city, temp in rows') && c.offsetHeight > 0)")
        next_frames(page, 3)
        shot(page, "phone-approval")
        view = page.evaluate("""() => {
            const inView = el => { const b = el.getBoundingClientRect();
                                   return [Math.max(b.top, 0), Math.min(b.bottom, window.innerHeight)]; };
            const log = document.querySelector('#chat [role=log]');
            const [logTop, logBottom] = inView(log);
            const code = [...log.querySelectorAll('pre')].filter(p => p.innerText.includes('for city, temp in rows'))
                                                         .pop();
            const box = code.getBoundingClientRect();
            const button = document.querySelector('#approve-btn').getBoundingClientRect();
            const editor = document.querySelector('#edit-code .cm-scroller');
            return {chatShown: logBottom - logTop,
                    codeShown: Math.min(box.bottom, logBottom) - Math.max(box.top, logTop),
                    codeHeight: box.height,
                    button: button.top >= 0 && button.bottom <= window.innerHeight,
                    editorHeight: editor.clientHeight,
                    pageWidth: document.documentElement.scrollWidth};
        }""")
        assert view["button"], view  # Approve is on screen
        assert view["chatShown"] >= 0.3 * 844, view  # the chat keeps a useful part of the screen
        assert view["codeShown"] >= min(60, view["codeHeight"]), view  # the step's code is on screen in the chat
        assert view["editorHeight"] <= 0.3 * 844, view  # the editor scrolls instead of pushing the page
        assert view["pageWidth"] <= 390 + 1, view  # no sideways scrolling
        approve.click()
        wait_for_text(page, "Step 2 · ✋ waiting for you")  # the final answer's step waits too
        page.locator("#approve-btn").click()
        wait_for_text(page, "The warmest city is Cairo.")


def test_wide_screen_keeps_the_sidebar_open(app_url: str) -> None:
    with page_at(app_url, 1440, 1000) as page:
        assert sidebar_open(page)


@pytest.mark.parametrize("width,height,name", [(1440, 1000, "dark"), (390, 844, "phone-dark")])
def test_dark_mode_is_readable(app_url: str, width: int, height: int, name: str) -> None:
    with page_at(app_url + "?__theme=dark", width, height) as page:
        assert page.evaluate("document.body.classList.contains('dark') || "
                             "document.documentElement.classList.contains('dark')")
        assert luminance(page, "#chat", "backgroundColor") < 0.1  # a dark page, not a white block
        send(page, "Which city is warmest?")
        wait_for_text(page, "The warmest city is Cairo.")
        answer = page.locator("#chat .message-row, #chat [data-testid='bot']").last
        answer.wait_for()
        assert contrast(page, "#run-status") >= 3, "status text unreadable in dark mode"
        assert page.locator("#chat").get_by_text("The warmest city is Cairo.").first.evaluate(
            "e => getComputedStyle(e).color") != "rgb(0, 0, 0)"
        assert contrast(page, "#chat .bot, #chat [data-testid='bot']") >= 4.5, chat_text(page)[-300:]
        shot(page, name)
