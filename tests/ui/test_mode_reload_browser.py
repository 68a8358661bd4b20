"""The approval mode a person chose survives a reload, in Chromium: the selector shows it again and the next
message pauses as it says (a reload used to show "Autonomous" again, and the next step ran without asking)."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from browser_driver import BROWSER_MARKS, chat_text, choose_mode, open_page, send, wait_for_text
from ui_testlib import code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS

SCRIPT = [code_reply("Print it.", "print('the approved code ran')\nfinal_answer('done after the reload')")]
MODE = "Approve each code step"


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("mode-reload")
    (base / "data").mkdir()
    with run_app(write_transcript(base / "script.json", SCRIPT), base / "data") as url:
        yield url


def test_the_chosen_mode_survives_a_reload_and_the_next_message_waits(app_url: str) -> None:
    with open_page(app_url) as page:
        assert page.locator("#approval-mode input").input_value() == "Autonomous: never pause"
        choose_mode(page, MODE)
        page.reload()
        page.wait_for_selector("#chat")
        page.wait_for_function("l => document.querySelector('#approval-mode input').value === l", arg=MODE,
                               timeout=15_000)
        send(page, "Print something.")
        code = page.locator("#edit-code")
        code.wait_for(state="visible")  # the code step waits for the person
        wait_for_text(page, " · ✋ waiting for you")
        assert "the approved code ran\n" not in chat_text(page)
        page.locator("#approve-btn").click()
        wait_for_text(page, "done after the reload")
        assert page.locator("#approval-mode input").input_value() == MODE
