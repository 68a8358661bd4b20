"""The app in a real browser (Debian's Chromium, driven by Playwright): stream, upload, chart, stop, new chat.

Screenshots of the data-analysis run are written to SCREENSHOT_DIR (docs/ with `make screenshots`).
"""
from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
from browser_driver import (
    BROWSER_MARKS,
    chat_text,
    next_frames,
    open_page,
    panel_links,
    scroll_chat_to,
    send,
    server_events,
    wait_for_events,
    wait_for_text,
    wait_in_view,
)
from ui_testlib import ANALYSIS_SCRIPT, PENGUINS, SCREENSHOT_DIR, SLOW_SCRIPT, run_app, write_transcript

pytestmark = BROWSER_MARKS


@pytest.fixture(scope="module")
def browser_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("browser")
    transcript = write_transcript(base / "browser.json", ANALYSIS_SCRIPT[:3] + SLOW_SCRIPT)
    (base / "data").mkdir()
    with run_app(transcript, base / "data") as url:
        yield url


@pytest.fixture(scope="module")
def page(browser_app: str):
    with open_page(browser_app) as page:
        yield page


def shot(page, name: str) -> None:
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT_DIR / f"screenshot-{name}.png"))


def test_first_visit_shows_examples_and_settings(page) -> None:
    assert page.locator("#chat").get_by_text("Explore the penguins data set").count() == 1
    for element_id in ("task-input", "stop-btn", "new-chat-btn", "files-panel", "model-picker"):
        page.locator(f"#{element_id}").first.wait_for(state="attached")  # the page's load events may still run
        assert page.locator(f"#{element_id}").count() == 1, element_id


def test_data_analysis_run_in_the_browser(page) -> None:
    send(page, "Explore penguins.csv: species counts, a chart of flipper length vs body mass, "
               "and a per-species summary file.", [PENGUINS])
    # Steps stream in: Step 1 shows up while the run is going, then more steps follow.
    wait_for_text(page, "Step 1")
    streamed_at = chat_text(page)
    wait_for_text(page, "Step 2")
    shot(page, "streaming")
    wait_for_text(page, "344 penguins", timeout=60)
    assert "Step 3" not in streamed_at or "344 penguins" not in streamed_at  # it was not all at once
    assert "Added to the workspace: penguins.csv" in chat_text(page)
    # The chart is inline in the chat.
    chart = page.locator("#chat img[src*='flipper_vs_mass']")
    chart.first.wait_for(state="visible")
    assert chart.first.evaluate("img => img.naturalWidth") > 100
    # The files panel lists the upload and the summary the code wrote, as download links.
    links = panel_links(page, "species_summary.csv")
    assert any(href.endswith("species_summary.csv") for href in links), links
    assert any(href.endswith("penguins.csv") for href in links), links
    # Finished steps are folded; what they printed (tables) and drew is in sight without a click.
    steps = page.locator("#chat .thought-group").filter(has=page.locator(".title", has_text="Step 1")).first
    scroll_chat_to(page, steps)
    wait_in_view(page, page.locator("#chat .message:has(.ad-step-output) table tr", has_text="Chinstrap").first)
    shot(page, "analysis")
    status = page.locator("#run-status").inner_text()
    assert re.search(r"success · 3 steps · [\d.]+ s · [\d,]+ tokens", status), status
    # The chat's own icons offer Copy, not Gradio's Clear: it only emptied the view, and the next message brought
    # the whole chat back (its memory and sandbox went on); New chat is the way to start afresh.
    page.locator("#chat button[aria-label='Copy conversation']").wait_for(state="visible")
    assert page.locator("#chat button[aria-label='Clear']").is_hidden()


def test_stop_during_a_long_step_then_new_chat(page) -> None:
    send(page, "Now something slow.")
    wait_for_text(page, "time.sleep(30)")
    # While the run streams, the message box is locked (by the page: ui/web/input_lock.py).
    assert page.evaluate("document.querySelector('#task-input textarea').disabled")
    wait_for_text(page, "sleeping")  # the code runs now (it printed before its long sleep; a running step is open)
    started = time.time()
    page.locator("#stop-btn").click()
    wait_for_text(page, "Stopped", timeout=15)
    assert time.time() - started < 10
    assert "woke up\n```" not in chat_text(page)  # the code's last print never ran
    page.locator("#chat").evaluate(
        "chat => chat.querySelectorAll('*').forEach(el => { if (el.scrollHeight > el.clientHeight + 5) "
        "el.scrollTop = el.scrollHeight; })")
    next_frames(page)
    shot(page, "stopped")
    # The session is still usable after a stop.
    send(page, "Still there?")
    wait_for_text(page, "still usable")
    # New chat: empty conversation, empty files panel, examples back; a message typed but not sent stays in the
    # box (it was emptied, so a task typed before deciding to start afresh was lost).
    page.locator("#task-input textarea").fill("A task typed before starting afresh")
    before = server_events(page)
    page.locator("#new-chat-btn").click()
    page.locator("#chat").get_by_text("Explore the penguins data set").wait_for()
    wait_for_events(page, before, 1)
    assert "still usable" not in chat_text(page)
    assert panel_links(page, wait_for=None) == []
    assert page.locator("#task-input textarea").input_value() == "A task typed before starting afresh"
