"""The first message on a fresh page, with no key: the embedded model answers it (a real app, a real browser).

Runs the embedded SmolLM2 on the CPU, so it is marked `embedded` as well as `browser`.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from browser_driver import BROWSER_MARKS, chat_text, open_page, send, wait_for_text
from ui_testlib import PROJECT_ROOT, run_app

from agents.models.selection import embedded_available

pytestmark = [*BROWSER_MARKS, pytest.mark.embedded,
              pytest.mark.skipif(not embedded_available(), reason="the embedded model's wheel is not installed")]

WEATHER = PROJECT_ROOT / "ui" / "assets" / "seattle-weather.csv"


@pytest.fixture(scope="module")
def embedded_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("embedded")
    (base / "data").mkdir()
    env = {"AGENTDECK_MODEL": "embedded:smollm2", "HF_HUB_OFFLINE": "1"}
    with run_app(base / "no-transcript.json", base / "data", extra_env=env) as url:
        yield url


def wait_for_status(page, needle: str, timeout: float) -> str:
    wait_for_text(page, needle, timeout=timeout, where="#run-status")
    return page.locator("#run-status").inner_text()


def test_the_first_message_gets_the_right_answer(embedded_app: str) -> None:
    with open_page(embedded_app) as page:
        note = page.locator("#model-note").inner_text()
        assert "cannot do multi-step analysis" in note and "HF_TOKEN" in note
        send(page, "What is 17 * 23?")
        status = wait_for_status(page, "success", timeout=240)
        assert "391" in chat_text(page), chat_text(page)[-1500:]
        assert re.search(r"· \d+ steps? ·", status) and "Not a final answer" not in chat_text(page), status


def test_a_question_about_an_uploaded_table_on_a_fresh_page(embedded_app: str) -> None:
    with open_page(embedded_app) as page:
        send(page, "What is the maximum of temp_max?", [WEATHER])
        wait_for_status(page, "success", timeout=240)
        text = chat_text(page)
        assert "35.6" in text, text[-1500:]
        assert "pd.read_csv" in text  # the answer came from code that read the upload


def test_the_pages_own_example_is_one_the_model_answers(embedded_app: str) -> None:
    """A newcomer clicks an example first: with the small model the chips are one-step questions it answers
    (the multi-step analyses failed every time), here the table one with its CSV attached."""
    with open_page(embedded_app) as page:
        assert "Fibonacci with code" not in chat_text(page)
        page.locator("#chat").get_by_text("Penguins: the mean body mass").click()
        wait_for_status(page, "success", timeout=240)
        text = chat_text(page)
        assert "4201.75" in text, text[-1500:]
        assert "penguins.csv" in text and "Not a final answer" not in text
