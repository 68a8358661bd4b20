"""Retry and Edit pressed while a run goes on, in Chromium: each is refused with a warning on the page, nothing is
added inside the running step (a note there used to split the step for good), and the message box stays locked
for the run (a refused Retry used to free it)."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_driver import BROWSER_MARKS, chat_text, next_frames, open_page, send, wait_for_text
from ui_testlib import code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS

GO = ".go"  # the step goes on once the test has pressed its buttons (written into the session's workspace)
SLOW = code_reply("A step that runs until the test lets it finish.",
                  "import pathlib, time\nprint('progress 1/2', flush=True)\n"
                  f"for _ in range(1200):\n    if pathlib.Path('{GO}').exists():\n        break\n    time.sleep(0.05)\n"
                  "print('progress 2/2')\nfinal_answer('slow step done')")


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    base = tmp_path_factory.mktemp("retry-during-run")
    (base / "data").mkdir()
    with run_app(write_transcript(base / "script.json", [SLOW]), base / "data") as url:
        yield url, base / "data"


def press_and_read_warning(page, button: str) -> str:
    """Press `button`, wait for its event to end (the run's own event goes on), and return the warning shown."""
    done = page.evaluate("window.adCompleted")
    page.locator(button).click()
    page.wait_for_function("n => window.adCompleted > n", arg=done, timeout=15_000)
    toast = page.locator(".toast-body").last
    toast.wait_for(timeout=15_000)
    text = toast.inner_text()
    page.locator(".toast-body .toast-close, .toast-body button").first.click()  # out of the way for the next one
    return text


def test_retry_and_edit_during_a_run_warn_and_leave_the_step_whole(app_url: tuple[str, Path]) -> None:
    url, data = app_url
    with open_page(url) as page:
        send(page, "Go slowly.")
        wait_for_text(page, "progress 1/2")
        assert "Nothing was retried: A run is going" in press_and_read_warning(page, "#retry-btn")
        next_frames(page)
        assert page.evaluate("document.querySelector('#task-input textarea').disabled")  # still the run's
        assert "A run is going: wait for it to end (or press Stop), then edit your last message" \
            in press_and_read_warning(page, "#edit-last-btn")
        assert page.locator("#edit-panel").is_hidden()
        for workspace in data.rglob("workspace"):
            (workspace / GO).write_text("go")  # the run may end now
        wait_for_text(page, "slow step done")
        page.wait_for_function("!document.querySelector('#task-input textarea').disabled", timeout=15_000)
        assert "Nothing was retried" not in chat_text(page) and "A run is going" not in chat_text(page)
