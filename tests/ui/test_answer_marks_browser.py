"""The embedded model's answers carry the app's checks in the chat (issue 31): a wrong-kind answer is marked
"not sure" with how to get a better model, a right-looking one confirmed by a second, independent attempt (on in
the app: `AppConfig.answer_agreement`), which the chat shows while it runs (a real app, a real browser).

The embedded model is too slow on a loaded machine for a browser test, so a replay model stands in for it: its
transcript says `prompt_style: tiny`, which gives it the embedded model's prompts and answer checks.
"""
from __future__ import annotations

import json
from pathlib import Path

from browser_driver import BROWSER_MARKS, chat_text, open_page, send, wait_for_text
from ui_testlib import PROJECT_ROOT, run_app

pytestmark = BROWSER_MARKS

PENGUINS = PROJECT_ROOT / "ui" / "assets" / "penguins.csv"


def _standin(path: Path, replies: list[str]) -> Path:
    path.write_text(json.dumps({"model_id": "embedded-standin", "prompt_style": "tiny", "replies": replies}))
    return path


def test_a_wrong_kind_answer_is_marked_not_sure_and_a_plain_one_checked_by_two_attempts(tmp_path: Path) -> None:
    replies = ['```python\nfinal_answer(pd.read_csv("penguins.csv")["species"].mode()[0])\n```',  # no chart
               "```python\nfinal_answer(17 * 23)\n```",
               "```python\nfinal_answer(391)\n```"]  # the second, independent attempt at the product
    # (Not "17 * 23": the app works that out itself (agents/answer_checks/recompute.py) and makes no second attempt.)
    data = tmp_path / "data"
    data.mkdir()
    # A loaded machine (the embedded evaluation running beside it) starts the app slowly.
    with run_app(_standin(tmp_path / "standin.json", replies), data, timeout=300) as url, open_page(url) as page:
        send(page, "Plot body_mass_g as a histogram", [PENGUINS])
        wait_for_text(page, "Not sure of this answer", timeout=90)
        text = chat_text(page)
        assert "Adelie" in text  # the answer is still shown, under its mark
        assert "A chart was asked for and none was made." in text
        assert "choose a capable model in Model" in text and "OPENAI_API_KEY" in text
        send(page, "What is the product of 17 and 23?")
        wait_for_text(page, "Checked: two attempts agree", timeout=90)
        text = chat_text(page)
        assert "391" in text and "Running that code again gave the same result." in text
        assert "A second, independent attempt (the question asked afresh) gave the same answer." in text
        assert "A second attempt, to check the answer" in text  # the chat showed the attempt itself
        assert text.count("Not sure of this answer") == 1  # the right-looking answer is not marked unsure
