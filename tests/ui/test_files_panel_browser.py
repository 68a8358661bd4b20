"""The files panel in Chromium: whole names at 1440 px, charts listed, and × asks before really deleting."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_driver import BROWSER_MARKS, open_page, panel_links, send, wait_for_text
from ui_testlib import PENGUINS, SCREENSHOT_DIR, code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS

LONG_CSV = "us-unemployment-by-state-2023.csv"
CHART = "unemployment-rate-by-state-chart.png"
SCRIPT = [
    code_reply("Write a table and a chart.",
               "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
               f"plt.plot([1, 2, 3])\nplt.savefig('{CHART}')\nplt.close()\n"
               f"open('{LONG_CSV}', 'w').write('state,rate\\nOhio,4.1\\n')\nprint('written')"),
    code_reply("Done.", "final_answer('files written')"),
]


@pytest.fixture(scope="module")
def app_and_data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    base = tmp_path_factory.mktemp("files-panel")
    (base / "data").mkdir()
    with run_app(write_transcript(base / "script.json", SCRIPT), base / "data") as url:
        yield url, base / "data"


def names_in_panel(page) -> list[str]:
    return [td.get_attribute("aria-label") for td in page.locator("#files-panel td.filename").all()]


def test_files_panel_whole_names_charts_and_confirmed_delete(app_and_data) -> None:
    url, data = app_and_data
    with open_page(url) as page:
        send(page, "Write the files", [PENGUINS])
        wait_for_text(page, "files written")
        panel_links(page, wait_for=CHART)
        listed = names_in_panel(page)
        assert listed[0] == "penguins.csv" and sorted(listed[1:]) == sorted([CHART, LONG_CSV])  # uploads first
        # One × a row: the upload was listed alone first (given a × of ours), then Gradio drew its own for each.
        removes = page.locator("#files-panel tr.file").evaluate_all(
            "rows => rows.map(r => r.querySelectorAll('button.label-clear-button').length)")
        assert removes == [1, 1, 1]
        # Whole names: each stem shows all its text (wrapped, not cut with an ellipsis).
        stem = page.locator(f"#files-panel td.filename[aria-label='{LONG_CSV}'] .stem")
        assert stem.inner_text() == LONG_CSV[:-4]
        assert stem.evaluate("e => getComputedStyle(e).textOverflow !== 'ellipsis'"
                             " && getComputedStyle(e).overflow === 'visible'")
        cell = page.locator(f"#files-panel td.filename[aria-label='{LONG_CSV}']")
        assert cell.evaluate("e => e.scrollWidth <= e.clientWidth + 1")  # nothing cut off to the right
        SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
        page.locator("#files-panel").screenshot(path=str(SCREENSHOT_DIR / "screenshot-files-panel.png"))

        [workspace_copy] = list(data.rglob(f"workspace/{LONG_CSV}"))
        remove = page.locator(f"#files-panel tr:has(td[aria-label='{LONG_CSV}']) button[aria-label='Remove this file']")
        # × asks first; "Keep it" keeps the file listed and on disk.
        remove.click()
        page.locator("#file-delete-confirm").wait_for(state="visible")
        assert LONG_CSV in page.locator("#file-delete-question").inner_text()
        page.wait_for_function(f"document.querySelector(\"#files-panel td[aria-label='{LONG_CSV}']\") !== null")
        page.locator("#file-delete-no").click()
        page.locator("#file-delete-confirm").wait_for(state="hidden")
        assert LONG_CSV in names_in_panel(page) and workspace_copy.is_file()
        # × then "Delete file": gone from the panel and from the workspace, also after a reload.
        remove.click()
        page.locator("#file-delete-yes").click()
        page.wait_for_function(f"document.querySelector(\"#files-panel td[aria-label='{LONG_CSV}']\") === null")
        page.locator("#file-delete-confirm").wait_for(state="hidden")
        assert not workspace_copy.exists()
        assert {"penguins.csv", CHART} <= set(names_in_panel(page))
        page.reload()
        page.wait_for_selector("#chat")
        wait_for_text(page, "files written")
        panel_links(page, wait_for=CHART)
        assert LONG_CSV not in names_in_panel(page) and CHART in names_in_panel(page)


LONE = "notes.txt"


@pytest.fixture(scope="module")
def lone_file_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    base = tmp_path_factory.mktemp("lone-file")
    (base / "data").mkdir()
    script = [code_reply("Write a note.", f"open('{LONE}', 'w').write('hello')\nfinal_answer('note written')")]
    with run_app(write_transcript(base / "script.json", script), base / "data") as url:
        yield url, base / "data"


def test_a_lone_file_the_agent_wrote_can_be_deleted(lone_file_app) -> None:
    """Gradio draws the × only for lists of two files or more: with nothing uploaded, the one file the agent
    wrote had none, so it could not be deleted."""
    url, data = lone_file_app
    with open_page(url) as page:
        send(page, "Write a note")
        wait_for_text(page, "note written")
        panel_links(page, wait_for=LONE)
        assert names_in_panel(page) == [LONE]
        [workspace_copy] = list(data.rglob(f"workspace/{LONE}"))
        page.locator(f"#files-panel tr:has(td[aria-label='{LONE}']) button[aria-label='Remove this file']").click()
        page.locator("#file-delete-yes").click()
        page.wait_for_function(f"document.querySelector(\"#files-panel td[aria-label='{LONE}']\") === null")
        assert not workspace_copy.exists()
