"""The page raises no uncaught error through a load, a run and a reload, with the tests' event counter on.

Why: the counter (browser_driver.EVENT_COUNTER_JS) reads a copy of each queue stream; when Gradio aborted a
stream, the copy's read was rejected with nobody catching it, three or more "signal is aborted without reason"
page errors a run, which hid any error of the app's own from a test or a person watching the console."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from browser_driver import BROWSER_MARKS, open_page, send, wait_for_events, wait_for_text
from ui_testlib import code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("page-errors")
    (base / "data").mkdir()
    script = [code_reply("Answer.", "final_answer('no errors here')")]
    with run_app(write_transcript(base / "script.json", script), base / "data") as url:
        yield url


def test_no_uncaught_page_errors_through_a_run_and_a_reload(app_url: str) -> None:
    with open_page(app_url) as page:
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.reload()
        page.wait_for_selector("#chat")
        send(page, "Answer me")
        wait_for_text(page, "no errors here")
        page.reload()
        page.wait_for_selector("#chat")
        wait_for_text(page, "no errors here")
        wait_for_events(page, 0, 1)  # the page load's events have ended
        assert errors == []
