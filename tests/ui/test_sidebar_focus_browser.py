"""A keyboard user moving with Tab through the chats' sidebar sees where they are (issue 31, item 11): the search
box and the rename box get the same focus outline as the message box.

Found by hand: Tab from the page's top reaches the search box, then the rename box, with no outline and no change
but a faint border colour (every try, 1440x900 and 390x844).
"""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from browser_driver import BROWSER_MARKS, open_page
from ui_testlib import code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("sidebar-focus")
    (base / "data").mkdir()
    with run_app(write_transcript(base / "script.json", [code_reply("Done.", "final_answer('ok')")]),
                 base / "data") as url:
        yield url


@pytest.mark.parametrize("frame", ["#chat-search", "#chat-title"])
def test_sidebar_boxes_show_keyboard_focus(app_url: str, frame: str) -> None:
    with open_page(app_url) as page:
        page.locator("body").click(position={"x": 700, "y": 5})  # nothing focused (the message box autofocuses)
        outline = "e => { const s = getComputedStyle(e); return [s.outlineStyle, parseFloat(s.outlineWidth)]; }"
        before = page.locator(frame).first.evaluate(outline)
        page.locator(f"{frame} input, {frame} textarea").first.focus()
        page.wait_for_function("s => document.querySelector(s).matches(':focus-within')", arg=frame)
        after = page.locator(frame).first.evaluate(outline)
        assert before[0] == "none" and after[0] == "solid" and after[1] >= 2, (before, after)
