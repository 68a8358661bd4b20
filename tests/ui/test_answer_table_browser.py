"""A data frame given as the final answer (`final_answer(df)`) in Chromium: Gradio's own table, sortable and
scrolling, as a step's last expression shows (ui/chat/value_table.py); the same once the page is reloaded (the chat
replayed from its saved steps), and a readable Markdown table in the export. It was a static table of text.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from browser_driver import BROWSER_MARKS, launch, open_tab, send, wait_for_text
from test_notebook_habits_browser import downloaded, rain_column, sort_by_rain
from ui_testlib import code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS

SCRIPT = [code_reply("Answer with the table.",
                     "import pandas as pd\n"
                     "summary = pd.DataFrame({'city': [f'City {i:02d}' for i in range(40)],\n"
                     "                        'rain': [float((i * 7) % 40) for i in range(40)]})\n"
                     "final_answer(summary)")]
LABEL = "Answer: DataFrame, 40 rows × 2 columns"


def the_answer_is_a_table(page) -> None:
    """The answer shows as Gradio's table (scrolling, sortable), under its label, and not as a static table."""
    wait_for_text(page, LABEL)
    table = page.locator("#chat .ad-value-table.ad-answer-table")
    table.wait_for(state="visible")
    assert rain_column(page)[:3] == ["0", "7", "14"]
    assert table.evaluate("t => [...t.querySelectorAll('*')].some(e => e.scrollHeight > e.clientHeight + 20 "
                          "&& ['auto', 'scroll'].includes(getComputedStyle(e).overflowY))")
    assert page.locator("#chat table:not(.ad-value-table table)").count() == 0  # no second, static copy
    sort_by_rain(page, table)


def test_a_data_frame_answer_is_a_sortable_table_live_reloaded_and_exported(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    (tmp_path / "data").mkdir()
    with run_app(write_transcript(tmp_path / "script.json", SCRIPT), tmp_path / "data") as url, \
            sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(viewport={"width": 1440, "height": 1000}, device_scale_factor=1)
        try:
            page = open_tab(context, url)
            send(page, "Which cities had how much rain?")
            the_answer_is_a_table(page)
            page.wait_for_function("!document.querySelector('#task-input textarea').disabled")  # the run ended
            page.reload()
            page.wait_for_selector("#chat")
            the_answer_is_a_table(page)  # the saved chat, replayed
            name, content = downloaded(page, "#export-md-btn")
            markdown = content.decode()
            assert name.endswith(".md") and "Answer: DataFrame" in markdown, markdown[-1500:]
            assert "| City 00 |" in markdown, markdown[-1500:]
        finally:
            context.close()
            browser.close()
