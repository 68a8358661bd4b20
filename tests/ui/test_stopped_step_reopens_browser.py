"""A chat stopped while the agent ran a step, reopened after a reload: the stopped step comes back with its code
and says it was stopped, and the restore note counts steps as the person does ("1 step", never "(1 steps)" for a
chat whose only step was the stopped one)."""
from __future__ import annotations

from pathlib import Path

from browser_driver import BROWSER_MARKS, chat_text, open_page, open_thought, send, wait_for_text
from ui_testlib import code_reply, run_app, write_transcript

pytestmark = BROWSER_MARKS

#: The step's code ignores the first interrupts (a stop then takes the sandbox several seconds): the chat ends the
#: run after its short grace, unconfirmed by the agent, and saves the chat as it is then (ui/session/stopping.py).
SCRIPT = [code_reply("This takes a while.",
                     "import time\nmarker = 'the slow step'\nprint('sleeping', flush=True)\nwhile True:\n"
                     "    try:\n        time.sleep(30)\n    except KeyboardInterrupt:\n        print('not yet')\n")]


def test_a_stopped_step_comes_back_with_its_code(tmp_path: Path) -> None:
    transcript = write_transcript(tmp_path / "script.json", SCRIPT)
    (tmp_path / "data").mkdir()
    with run_app(transcript, tmp_path / "data") as url, open_page(url) as page:
        send(page, "Something slow.")
        wait_for_text(page, "sleeping")  # the step's code runs now
        page.locator("#stop-btn").click()
        wait_for_text(page, "Stopped", timeout=15)
        page.wait_for_function("(document.querySelector('#run-status')?.innerText || '').startsWith('stopped')")
        page.reload()
        page.wait_for_selector("#chat")
        wait_for_text(page, "Chat restored", timeout=60)
        open_thought(page, "Step 1", every=True)
        shown = chat_text(page)
        assert "marker = 'the slow step'" in shown, shown  # the stopped step's code
        assert "stopped" in shown.lower().split("chat restored")[0], shown  # ... and that it was stopped
        assert "steps)" not in shown and "1 steps" not in shown, shown
        assert "you stopped it before it finished" in shown, shown  # not "errored originally"
