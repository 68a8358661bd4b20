"""A chat stopped while the agent ran a step, reopened after a reload: the stopped step comes back with its code
and says it was stopped, and the restore note counts steps as the person does ("1 step", never "(1 steps)" for a
chat whose only step was the stopped one)."""
from __future__ import annotations

import re
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


#: A step that sleeps and stops at the first interrupt (the agent confirms the Stop).
SLEEPY = [code_reply("Take a minute.", "import time\nprint('sleeping', flush=True)\ntime.sleep(60)\nprint('woke')")]

#: The folded steps' titles, as the page shows them.
STEP_TITLES = "() => [...document.querySelectorAll('#chat .thought-group .title')].map(t => t.innerText.trim())"


def test_a_stopped_steps_title_reads_the_same_live_and_after_a_reload(tmp_path: Path) -> None:
    """Issue 31 review: live, the stopped step's title was its token counts ("784 tokens (757 in · 27 out)");
    reopened, it said what the step did ("Take a minute. · 784 tokens")."""
    transcript = write_transcript(tmp_path / "script.json", SLEEPY)
    (tmp_path / "data").mkdir()
    with run_app(transcript, tmp_path / "data") as url, open_page(url) as page:
        send(page, "Something slow.")
        wait_for_text(page, "sleeping")
        page.locator("#stop-btn").click()
        wait_for_text(page, "Stopped", timeout=15)
        page.wait_for_function("(document.querySelector('#run-status')?.innerText || '').startsWith('stopped')")
        live = page.evaluate(STEP_TITLES)
        page.reload()
        page.wait_for_selector("#chat")
        wait_for_text(page, "Chat restored", timeout=60)
        again = page.evaluate(STEP_TITLES)
        assert live and any("Take a minute." in title for title in live), live
        # The same words; the time (live: until the run's end, reopened: until the stop's save) within a tenth.
        assert [words(title) for title in again] == [words(title) for title in live], (live, again)
        assert all(abs(seconds(a) - seconds(b)) <= 0.15 for a, b in zip(live, again, strict=True)), (live, again)


_TIME = re.compile(r"\s*\((\d+(?:\.\d+)?)(ms|s)\)$")


def words(title: str) -> str:
    return _TIME.sub("", title)


def seconds(title: str) -> float:
    found = _TIME.search(title)
    return 0.0 if found is None else float(found.group(1)) / (1000 if found.group(2) == "ms" else 1)
