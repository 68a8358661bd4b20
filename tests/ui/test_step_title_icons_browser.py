"""A folded step's title never runs under the chat's icons (Copy) (issue 31: on a phone, 390x844, a step
scrolled to the top of the chat had its title's text under the icons). Measured at 390x844 and 1440x900: each
step's title is scrolled to the top of the chat, then the boxes of its text (the words themselves, line by line)
and of its bar (the bordered, clickable line) are compared with the box of each icon. Screenshots go to
SCREENSHOT_DIR."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_driver import BROWSER_MARKS, scroll_chat_to, send, thought_titles, wait_for_text
from test_narrow_and_dark_browser import page_at
from ui_testlib import SCREENSHOT_DIR, code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS

#: Thoughts long enough that a folded title fills its line to the right edge at both widths.
THOUGHTS = [f"Step {n}: read the ferry timetable again, group the sailings by pier and route, and compare each "
            f"route's weekly passengers with the fares charged on it" for n in range(1, 6)]
#: Each step prints a few lines, so the chat is long enough at 1440x900 to scroll every title to its top.
SCRIPT = [code_reply(thought, f"for line in range(6):\n    print('part {n}, line', line)")
          for n, thought in enumerate(THOUGHTS, 1)]
SCRIPT.append(code_reply("Done.", "final_answer('The busiest route is Gage-Gobo.')"))

#: Boxes of a title's visible text (one per line of each text node, the fold arrow left out), of its bar, and of
#: the chat's icon buttons (copy conversation, clear), in page coordinates.
BOXES_JS = """title => {
    const box = r => ({left: r.left, top: r.top, right: r.right, bottom: r.bottom});
    const text = [], walker = document.createTreeWalker(title, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
        const node = walker.currentNode;
        if (!node.textContent.trim() || node.parentElement.closest('button, svg')) continue;
        const range = document.createRange();
        range.selectNodeContents(node);
        for (const r of range.getClientRects()) if (r.width > 0 && r.height > 0) text.push(box(r));
    }
    const icons = [...document.querySelectorAll('#chat .icon-button-wrapper button')]
        .filter(b => b.getBoundingClientRect().width > 0)
        .map(b => ({label: b.getAttribute('aria-label') || b.title, ...box(b.getBoundingClientRect())}));
    const bar = title.getBoundingClientRect(), log = document.querySelector('#chat [role=log]');
    return {text, bar: box(bar), icons, below_chat_top: bar.top - log.getBoundingClientRect().top,
            chat_at_end: log.scrollTop + log.clientHeight >= log.scrollHeight - 1};
}"""


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("title-icons")
    (base / "data").mkdir()
    with run_app(write_transcript(base / "script.json", SCRIPT), base / "data") as url:
        yield url


def overlaps(a: dict, b: dict) -> bool:
    return a["left"] < b["right"] and b["left"] < a["right"] and a["top"] < b["bottom"] and b["top"] < a["bottom"]


@pytest.mark.parametrize("width,height", [(390, 844), (1440, 900)])
def test_a_folded_steps_title_never_runs_under_the_chats_icons(app_url: str, width: int, height: int,
                                                                tmp_path: Path) -> None:
    with page_at(app_url, width, height) as page:
        send(page, "Which ferry route is the busiest?")
        wait_for_text(page, "The busiest route is Gage-Gobo.")
        page.wait_for_function("document.querySelector('#run-status').innerText.startsWith('success')")
        at_top = 0
        for n in range(1, len(THOUGHTS) + 1):
            title = thought_titles(page, f"Step {n}: read the ferry timetable").first
            scroll_chat_to(page, title)
            measured = title.evaluate(BOXES_JS)
            assert measured["text"] and measured["icons"], measured  # what is compared is there (Copy; Clear is hidden)
            # The title is at the top of the chat's view, or as near as it gets with the chat scrolled to its end.
            assert abs(measured["below_chat_top"]) <= 2 or measured["chat_at_end"], measured
            at_top += abs(measured["below_chat_top"]) <= 2
            # The title's bar reaches within 40 px of the icons' side of the chat (under them once, with Clear shown
            # too): only their heights keep them apart where the title is wide.
            assert measured["bar"]["right"] > min(i["left"] for i in measured["icons"]) - 40, measured
            parts = [("text", t) for t in measured["text"]] + [("bar", measured["bar"])]
            under = [(part, icon["label"]) for part, part_box in parts for icon in measured["icons"]
                     if overlaps(part_box, icon)]
            if under:
                page.screenshot(path=str(tmp_path / f"title-under-icons-{width}.png"))
            assert not under, f"step {n}'s title runs under the icons at {width}px: {sorted(set(under))}"
        assert at_top >= 3, f"only {at_top} titles reached the top of the chat: too short a chat to measure"
        SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOT_DIR / f"step-title-icons-{width}.png"))
