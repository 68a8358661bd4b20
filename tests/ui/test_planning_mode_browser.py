"""Issue 31, item 5, in a real browser (Debian's Chromium, Playwright): choosing "Review plans" and then
"Autonomous" again leaves no planning behind, and none of the changes builds a new agent (issue 32).

Before the fix, Review plans wrote a planning interval into Agent settings and nothing took it out again: every
later run made an extra planning call (here: the model's next reply, read as a plan), and the changed setting
started a new agent that re-ran the chat's code ("Settings changed").
"""
from __future__ import annotations

from pathlib import Path

from browser_driver import BROWSER_MARKS, chat_text, choose_mode, open_page, send, wait_for_text
from ui_testlib import code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS

SCRIPT = [
    "1. Set x.\n2. Answer.<end_plan>",
    code_reply("Follow the plan.", "x = 40\nfinal_answer(f'planned {x}')"),
    code_reply("No plan now.", "final_answer(f'unplanned {x + 1}')"),
    code_reply("Still no plan.", "final_answer(f'unplanned again {x + 2}')"),
]


def test_review_plans_then_autonomous_plans_no_more(tmp_path: Path) -> None:
    transcript = write_transcript(tmp_path / "script.json", SCRIPT)
    (tmp_path / "data").mkdir()
    with run_app(transcript, tmp_path / "data", extra_env={"AGENTDECK_MAX_STEPS": "6"}) as url, \
            open_page(url) as page:
        choose_mode(page, "Review plans")
        assert "plans once" in page.locator("#approval-mode-note").inner_text()
        send(page, "Set x, with a plan.")
        page.locator("#plan-continue-btn").click()
        wait_for_text(page, "planned 40")
        choose_mode(page, "Autonomous: never pause")
        send(page, "Add one.")
        wait_for_text(page, "unplanned 41")
        send(page, "Add two.")
        wait_for_text(page, "unplanned again 42")
        text = chat_text(page)
        assert text.count("🧭 Plan") == 1, text[-2000:]  # the first run's plan only
        assert "Settings changed" not in text and "Re-ran" not in text
        page.locator("#settings").get_by_text("Agent settings").click()
        assert page.locator("#settings-planning input").input_value() == "0"  # the setting never changed
