"""The step view in Chromium: a running step is open and its output streams in sight; finished steps fold to one
line with their key output (a printed table, a chart) readable without a click and no empty bands between them;
a DataFrame answer is a table; files named in an answer are links to their published copies. Also at 390 px and
in dark mode. Screenshots go to SCREENSHOT_DIR (docs/ with `make screenshots`)."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_driver import BROWSER_MARKS, chat_text, open_page, scroll_chat_to, send, wait_for_text, wait_in_view
from test_narrow_and_dark_browser import contrast, page_at
from ui_testlib import PENGUINS, SCREENSHOT_DIR, code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS

GO = ".go"  # the slow step goes on once the test has looked at it (written into the session's workspace)
SCRIPT = [
    code_reply("Load the table and summarise it by species.",
               "import pandas as pd\ndf = pd.read_csv('penguins.csv')\n"
               "summary = df.groupby('species')[['body_mass_g', 'flipper_length_mm']].mean().round(1)\n"
               "summary.to_csv('species_summary.csv')\nprint('rows', len(df))\nprint(summary)"),
    code_reply("Chart the mean body mass.",
               "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
               "fig, ax = plt.subplots(figsize=(5, 3))\nsummary['body_mass_g'].plot.bar(ax=ax)\n"
               "fig.tight_layout()\nfig.savefig('mass_by_species.png', dpi=80)\nplt.close(fig)"),
    code_reply("A long step that reports its progress.",
               "import pathlib, time\nprint('progress: 1 of 2', flush=True)\n"
               f"for _ in range(1200):\n    if pathlib.Path('{GO}').exists():\n        pathlib.Path('{GO}').unlink()\n"
               "        break\n    time.sleep(0.05)\n"
               "print('progress: 2 of 2')"),
    code_reply("Return the table itself.", "final_answer(df)"),
    code_reply("Name the files.",
               "final_answer('The summary is in species_summary.csv and the chart in `mass_by_species.png` "
               "(not /etc/passwd).')"),
]


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    base = tmp_path_factory.mktemp("steps")
    data = base / "data"
    data.mkdir()
    with run_app(write_transcript(base / "steps.json", SCRIPT), data) as url:
        yield url, data


def shot(page, name: str) -> None:
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT_DIR / f"screenshot-{name}.png"))


def let_slow_steps_go_on(data: Path) -> None:
    for workspace in data.rglob("workspace"):
        if (workspace / "penguins.csv").exists():
            (workspace / GO).write_text("go")


def step_group(page, title: str):
    """The thought box of a top-level step, by its title."""
    return page.locator("#chat .thought-group").filter(has=page.locator(".title", has_text=title)).first


def is_open(page, title: str) -> bool:
    return step_group(page, title).locator(".title").first.evaluate("t => t.classList.contains('expanded')")


def run_to_the_answer(page, data: Path, on_streaming=None) -> None:
    """Send the analysis, look at the long step while it streams, let it finish, wait for the table answer."""
    send(page, "Summarise penguins.csv by species and chart it.", [PENGUINS])
    wait_for_text(page, "progress: 1 of 2", timeout=60)
    if on_streaming is not None:
        on_streaming()
    let_slow_steps_go_on(data)
    wait_for_text(page, "of 344 rows", timeout=60)
    page.wait_for_function("document.querySelector('#run-status').innerText.startsWith('success')")


def test_the_running_step_is_open_and_finished_steps_show_their_tables_and_charts(app) -> None:
    url, data = app
    with open_page(url) as page:
        def while_streaming() -> None:
            # The long step is open and what it printed so far is on screen, while the run is still going.
            progress = page.locator("#chat").get_by_text("progress: 1 of 2").first
            assert is_open(page, "Step 3")
            wait_in_view(page, progress)
            assert page.locator("#run-status").inner_text().startswith("running")
            assert not is_open(page, "Step 1") and not is_open(page, "Step 2")  # done: folded
            chart = page.locator("#chat img[src*='mass_by_species']").first  # loaded after the step showed...
            page.wait_for_function("img => img.complete && img.naturalWidth > 100", arg=chart.element_handle())
            wait_in_view(page, progress)  # ...and the chat followed the output down
            shot(page, "steps-streaming")

        run_to_the_answer(page, data, while_streaming)
        # Every step folded; what they found is in sight without a click: the table, the chart, the progress.
        for title in ("Step 1", "Step 2", "Step 3", "Step 4"):
            assert not is_open(page, title), title
        chat = page.locator("#chat")
        table = chat.locator(".message:has(.ad-step-output) table").first
        assert table.is_visible()
        assert table.locator("tr", has_text="Gentoo").inner_text().split() == ["Gentoo", "5076.0", "217.2"]
        chart = chat.locator("img[src*='mass_by_species']").first
        chart.scroll_into_view_if_needed()
        page.wait_for_function("img => img.complete && img.naturalWidth > 100", arg=chart.element_handle())
        assert chat.get_by_text("progress: 2 of 2").first.is_visible()
        # No empty bands: each folded step's box is followed closely by what comes next.
        gaps = page.evaluate("""() => {
            const shown = '#chat .thought-group, #chat .message:has(.ad-step-output) .md, '
                        + '#chat .message-row:has(img) .flex-wrap';
            const boxes = [...document.querySelectorAll(shown)]
                .filter(el => !el.parentElement.closest('.thought-group')).map(el => el.getBoundingClientRect());
            return boxes.slice(1).map((box, i) => box.top - boxes[i].bottom);
        }""")
        assert gaps and max(gaps) <= 16, gaps
        # Opened, a step shows its code; what it printed is read once, below it, not again inside (issue 31).
        step_group(page, "Step 3").locator(".title").first.click()
        page.wait_for_function("() => [...document.querySelectorAll('#chat .thought-group .title.expanded')]"
                               ".some(t => t.innerText.includes('Step 3'))")
        printed = page.evaluate("""() => [...document.querySelectorAll('#chat pre')]
            .filter(pre => pre.innerText.includes('progress: 2 of 2') && !pre.innerText.includes('print(')).length""")
        assert printed == 1, f"the step's output is shown {printed} times"
        step_group(page, "Step 3").locator(".title").first.click()
        # The DataFrame answer is Gradio's table of every column (sortable, scrolling: test_answer_table_browser.py),
        # its label saying how much of the frame it holds.
        answer = chat.locator(".message-row").last.locator(".ad-answer-table")
        answer.wait_for()
        header = [cell.inner_text().strip() for cell in answer.locator("[role=columnheader]").all()]
        assert header[-2:] == ["sex", "year"] and "species" in header, header
        assert "Answer: DataFrame, 344 rows × 8 columns. First 100 of 344 rows" in answer.inner_text()
        scroll_chat_to(page, step_group(page, "Step 3"))
        shot(page, "steps")


def test_files_named_in_an_answer_are_links_to_their_copies(app) -> None:
    url, data = app
    with open_page(url) as page:
        run_to_the_answer(page, data)
        send(page, "Which files did you write?")
        # Not the text alone: it shows first in the step's streamed code (`final_answer('The summary is in ...')`),
        # and on a loaded machine the answer's row, with its links, comes a while later (after the step ran and
        # the files were published). Wait for that row's link.
        answer = page.locator("#chat .message-row").last
        answer.locator("a", has_text="mass_by_species.png").wait_for(timeout=60_000)
        links = {a.inner_text(): a.get_attribute("href") for a in answer.locator("a").all()}
        assert set(links) == {"species_summary.csv", "mass_by_species.png"}, links
        assert all(str(data) not in href for href in links.values())  # the published copy, not the workspace
        response = page.request.get(page.url.split("?")[0] + links["species_summary.csv"])
        assert response.ok and response.text().startswith("species,body_mass_g")
        assert "/etc/passwd" in answer.inner_text()  # shown as text, not a link


@pytest.mark.parametrize("width,height,theme,name", [(390, 844, "", "steps-phone"),
                                                     (1440, 1000, "?__theme=dark", "steps-dark")])
def test_the_step_view_on_a_phone_and_in_dark_mode(app, width: int, height: int, theme: str, name: str) -> None:
    url, data = app
    with page_at(url + theme, width, height) as page:
        run_to_the_answer(page, data)
        table = page.locator("#chat .message:has(.ad-step-output) table").first
        scroll_chat_to(page, step_group(page, "Step 1"))
        wait_in_view(page, table.locator("tr", has_text="Gentoo"))
        assert page.evaluate("document.documentElement.scrollWidth") <= width + 1  # wide tables scroll inside
        cell = "#chat .message:has(.ad-step-output) table td"
        assert contrast(page, cell) >= 4.5, chat_text(page)[-300:]
        shot(page, name)
