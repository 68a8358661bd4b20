"""The saved-chats sidebar in Chromium: the export box shows an exported file's whole name, and a chat reopened
in a second tab of the same browser (by its page load, or by a click in its side list) never shows the welcome
while it comes back. Screenshots go to SCREENSHOT_DIR."""
from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from browser_driver import BROWSER_MARKS, EVENT_COUNTER_JS, launch, next_frames, send, wait_for_text
from ui_testlib import SCREENSHOT_DIR, code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS

SCRIPT = [code_reply("Done.", "final_answer('The warmest city is Cairo.')")]
LONG_QUESTION = "Which city in my quarterly temperature report is the warmest overall this year?"
#: The file the export writes: the chat's title made safe, cut at 60 characters (HistoryController._file_stem).
LONG_EXPORT = "Which_city_in_my_quarterly_temperature_report_is_the_warmest.md"
WELCOME = "Ask the agent to analyse data"  # the start of the chat's placeholder (ui/layout.py PLACEHOLDER)

#: Records, in every frame the page paints from its start, whether the chat shows the welcome: `adWelcomeSeen`
#: lists the times (ms since the page started) of frames that showed it, from `window.adWatchFrom` on.
WELCOME_WATCH_JS = """
(() => {
  window.adWatchFrom = 0;
  window.adWelcomeSeen = [];
  const sample = () => {
    const chat = document.querySelector('#chat');
    if (chat && performance.now() >= window.adWatchFrom && chat.innerText.includes(WELCOME))
      window.adWelcomeSeen.push(Math.round(performance.now()));
    requestAnimationFrame(sample);
  };
  requestAnimationFrame(sample);
})();
""".replace("WELCOME", json.dumps(WELCOME))


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("sidebar")
    (base / "data").mkdir()
    with run_app(write_transcript(base / "script.json", SCRIPT), base / "data") as url:
        yield url


@pytest.fixture
def browser_context(app_url: str) -> Iterator:
    """A fresh browser (its own saved chats), 1440x1000, watching every page's welcome from its start."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(viewport={"width": 1440, "height": 1000}, device_scale_factor=1)
        context.add_init_script(EVENT_COUNTER_JS)
        context.add_init_script(WELCOME_WATCH_JS)
        context.set_default_timeout(30_000)
        try:
            yield context
        finally:
            context.close()
            browser.close()


def open_tab(context, url: str):
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector("#chat")
    return page


def finish_a_chat(page, question: str) -> None:
    send(page, question)
    wait_for_text(page, "The warmest city is Cairo.")
    page.wait_for_function("!document.querySelector('#task-input textarea').disabled")  # the run has ended


def shot(page, name: str) -> None:
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT_DIR / f"screenshot-{name}.png"))


def test_the_export_box_shows_the_whole_file_name(app_url: str, browser_context) -> None:
    page = open_tab(browser_context, app_url)
    finish_a_chat(page, LONG_QUESTION)
    page.locator("#export-md-btn").click()
    name = page.locator("#export-file td.filename")
    name.wait_for()
    next_frames(page)
    page.locator("#history-sidebar").screenshot(path=str(SCREENSHOT_DIR / "screenshot-export-name.png"))
    shown = name.evaluate("""cell => {
        const holder = cell.closest('.file-preview-holder'), frame = holder.getBoundingClientRect();
        const parts = [...cell.querySelectorAll('span')].filter(s => s.innerText);
        const inside = parts.every(s => { const b = s.getBoundingClientRect();
            return b.top >= frame.top - 1 && b.bottom <= frame.bottom + 1 && b.left >= frame.left - 1
                   && b.right <= frame.right + 1; });
        const clipped = parts.some(s => s.scrollWidth > s.clientWidth + 1)
                        || holder.scrollHeight > holder.clientHeight + 1;
        return {text: cell.innerText.replace(/\\s+/g, ''), title: cell.getAttribute('title'), inside, clipped};
    }""")
    # Readable in full: as visible, unclipped text, or at least in its tooltip.
    assert (shown["text"] == LONG_EXPORT and shown["inside"] and not shown["clipped"]) \
        or shown["title"] == LONG_EXPORT, shown


def test_a_second_tab_reopens_the_chat_without_the_welcome(app_url: str, browser_context) -> None:
    first = open_tab(browser_context, app_url)
    finish_a_chat(first, "Which city is warmest, first chat?")
    second = open_tab(browser_context, app_url)  # reopens this browser's open chat on load
    wait_for_text(second, "Which city is warmest, first chat?")
    next_frames(second)
    assert second.evaluate("window.adWelcomeSeen") == [], "the welcome showed before the chat came back"


def test_a_chat_clicked_in_a_second_tab_never_shows_the_welcome(app_url: str, browser_context) -> None:
    first = open_tab(browser_context, app_url)
    finish_a_chat(first, "Which city is warmest, saved chat?")
    first.locator("#new-chat-btn").click()  # this browser's open chat is now a new, empty one
    wait_for_text(first, WELCOME)
    second = open_tab(browser_context, app_url)
    wait_for_text(second, WELCOME)  # the new chat: the welcome is right here
    entry = second.locator("#chat-list label").filter(has_text="saved chat")
    entry.wait_for()
    next_frames(second)
    second.evaluate("window.adWatchFrom = Infinity; window.adWelcomeSeen = []")
    # From the frame after the click until the chat is there, no frame may show the welcome.
    entry.evaluate("label => { label.addEventListener('click', () => { window.adWatchFrom = performance.now() + 1; "
                   "}, {capture: true}); }")
    entry.click()
    wait_for_text(second, "Which city is warmest, saved chat?")
    next_frames(second)
    shot(second, "second-tab-opened")
    assert second.evaluate("window.adWelcomeSeen") == [], "the welcome showed while the clicked chat opened"


#: How wide each box's placeholder is, drawn in the box's own font, against the room its text has (the box less
#: its padding): a placeholder wider than the room is cut at the box's edge.
PLACEHOLDER_ROOM_JS = """() => [...document.querySelectorAll('#history-sidebar input[placeholder], '
                                 + '#history-sidebar textarea[placeholder]')].map(box => {
    const style = getComputedStyle(box);
    const pen = document.createElement('canvas').getContext('2d');
    pen.font = style.font;
    const room = box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    return {placeholder: box.placeholder, width: Math.ceil(pen.measureText(box.placeholder).width), room};
})"""


def test_the_sidebar_placeholders_are_not_cut_at_1440x900(app_url: str, browser_context) -> None:
    """Issue 31's review: at 1440x900 the chat search's placeholder ended cut off at the box's edge."""
    page = open_tab(browser_context, app_url)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.locator("#chat-search").wait_for(state="visible")
    next_frames(page)
    boxes = page.evaluate(PLACEHOLDER_ROOM_JS)
    assert any(b["placeholder"].startswith("🔍") for b in boxes), boxes  # the search box is among them
    assert all(b["room"] > 0 and b["width"] <= b["room"] for b in boxes), boxes
