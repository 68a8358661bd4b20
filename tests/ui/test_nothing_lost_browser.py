"""Nothing lost (issue 17) in a real browser (Debian's Chromium, Playwright): two tabs on one saved chat, and a
reload or a closed tab during a run.

Every tab of a test lives in one browser context, so they share the browser's identity (gr.BrowserState, in
localStorage) and so its saved chats. The app runs the replay model; what each turn answers comes from the
sandbox's own state (a counter the rebuilt sandbox re-runs), so the order of the turns on disk shows in their
answers. The slow step waits inside the sandbox for a file the test writes: the page is reloaded while the
step is certainly running, without sleeping for it.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from browser_driver import BROWSER_MARKS, chat_text, launch, send, wait_for_text
from ui_testlib import code_reply, run_app, write_transcript

from tests.waiting import wait_until
from ui.saved.store import ChatStore

pytestmark = BROWSER_MARKS

SECRET = "browser-nothing-lost-secret-0123456789"

#: Every call answers the same: count this chat's turns in the sandbox (a reopened chat's rebuilt sandbox
#: re-runs the recorded steps, so the count goes on) and answer with the count.
COUNTING_TURN = code_reply("Count this turn.",
                           "try:\n    turn_count += 1\nexcept NameError:\n    turn_count = 1\n"
                           "final_answer(f'answer number {turn_count}')")

#: Step 1 prints, then waits (inside the sandbox) for the test's `go.txt`; step 2 prints; step 3 answers.
GATED_RUN = [
    code_reply("Start the long job.",
               "import time\nprint('long job started', flush=True)\nwaited = 0.0\n"
               "while waited < 90:\n    try:\n        open('go.txt').close()\n        break\n"
               "    except FileNotFoundError:\n        time.sleep(0.05)\n        waited += 0.05\n"
               "job_state = 'finished'\nprint('long job', job_state)"),
    code_reply("Report on the job.", "print('second step sees', job_state)"),
    code_reply("Done.", "final_answer(f'The long job {job_state} without being killed')"),
]


def new_tab(context, url: str):
    page = context.new_page()
    page.set_default_timeout(40_000)
    page.goto(url)
    page.wait_for_selector("#chat")
    page.wait_for_function("Object.keys(localStorage).includes('agentdeck-browser')")
    return page


def saved_chat(data: Path, store: ChatStore):
    """The one saved chat of the data folder (the test's browser has one identity and one chat)."""
    metas = sorted(data.glob("owners/*/*/meta.json"))
    assert len(metas) == 1, metas
    folder = metas[0].parent
    chat = store.get(folder.parent.name, folder.name)
    assert chat is not None
    return chat


def wait_for_any(page, needles: tuple[str, ...], timeout: float = 40.0) -> str:
    """The first of `needles` to appear in the chat."""
    return wait_until(lambda: next((n for n in needles if n in chat_text(page)), None), timeout,
                      f"one of {needles} in the chat")


def box_text(page) -> str:
    return page.locator("#task-input textarea").input_value()



@contextmanager
def app_in_a_browser(tmp_path: Path, script: list[str]) -> Iterator[tuple[str, Path, Any]]:
    """The app on a scripted model and a fresh browser context (one browser: its tabs share the saved-chats
    identity): (url, the data folder, the context)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    data = tmp_path / "data"
    data.mkdir()
    with run_app(write_transcript(tmp_path / "script.json", script), data, extra_env={"AGENTDECK_SECRET": SECRET}) \
            as url, sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(viewport={"width": 1440, "height": 1000})
        try:
            yield url, data, context
        finally:
            context.close()
            browser.close()


def test_two_tabs_on_one_saved_chat_lose_no_turn(tmp_path: Path) -> None:
    with app_in_a_browser(tmp_path, [COUNTING_TURN] * 8) as (url, data, context):
        tab_a = new_tab(context, url)
        send(tab_a, "first from A")
        wait_for_text(tab_a, "answer number 1")
        wait_for_text(tab_a, "first from A", where="#chat-list")

        tab_b = new_tab(context, url)  # the same browser: it reopens the chat A has open
        wait_for_text(tab_b, "Chat restored")
        assert "answer number 1" in chat_text(tab_b)

        tab_a.reload()  # A opens the chat again (from disk) after B: A continues it
        tab_a.wait_for_selector("#chat")
        wait_for_text(tab_a, "Chat restored")
        send(tab_a, "second from A")
        wait_for_text(tab_a, "answer number 2")

        # B is told A took the chat (ui/panels/chat_taken.py), its box locked so nothing typed is refused, and it
        # may take over
        tab_b.bring_to_front()
        wait_for_text(tab_b, "open in another tab")
        tab_b.wait_for_function("document.querySelector('#task-input textarea').disabled")
        assert "answer number 2" not in chat_text(tab_b)
        take_over = tab_b.locator("#take-over-btn")
        take_over.wait_for(state="visible")
        take_over.click()
        wait_for_text(tab_b, "answer number 2")  # A's turn, from disk
        assert "second from A" in chat_text(tab_b)
        take_over.wait_for(state="hidden")
        send(tab_b, "from B")
        wait_for_text(tab_b, "answer number 3")
        tab_b.wait_for_function("!document.querySelector('#task-input textarea').disabled")

        chat = saved_chat(data, ChatStore(data, secret=SECRET.encode()))
        memory, metadata = chat.store.load_memory(chat)  # the file is whole and signed
        assert [t["text"] for t in metadata["turns"]] == ["first from A", "second from A", "from B"]
        assert [s.output for s in memory.steps if s.step_type == "final_answer"] == \
            ["answer number 1", "answer number 2", "answer number 3"]
        assert [s.step_type for s in memory.steps].count("task") == 3


def release_gate(data: Path) -> None:
    """Let the waiting step go on: write go.txt into the chat's workspace."""
    workspaces = list(data.glob("owners/*/*/workspace"))
    assert len(workspaces) == 1, workspaces
    (workspaces[0] / "go.txt").write_text("go", encoding="utf-8")


def check_finished_run(page, data: Path, task: str) -> None:
    wait_for_text(page, "The long job finished without being killed", timeout=60)
    text = chat_text(page)
    assert task in text and "Step 1" in text and "Step 2" in text
    chat = saved_chat(data, ChatStore(data, secret=SECRET.encode()))
    steps = ["task", "action", "action", "action", "final_answer"]
    # The app shows the run's end first, then saves it: wait for the save.
    wait_until(lambda: [s.step_type for s in chat.store.load_memory(chat)[0].steps] == steps,
               what="the run's end on disk")
    memory, metadata = chat.store.load_memory(chat)
    assert [t["text"] for t in metadata["turns"]] == [task]
    assert "long job finished" in (next(memory.action_steps()).logs or "")


def test_reload_during_a_run_reattaches_and_streams_the_rest(tmp_path: Path) -> None:
    task = "Run the long job please"
    with app_in_a_browser(tmp_path, GATED_RUN) as (url, data, context):
        page = new_tab(context, url)
        send(page, task)
        wait_for_text(page, "open('go.txt')")  # step 1's code runs: it waits for the gate
        page.reload()
        page.wait_for_selector("#chat")
        wait_for_text(page, task)  # the reloaded page shows the person's message and the run so far
        wait_for_text(page, "open('go.txt')")
        before = chat_text(page)
        assert "Step 2" not in before and "without being killed" not in before  # the step still waits
        release_gate(data)
        check_finished_run(page, data, task)  # the rest streams live on the reloaded page


def test_closed_tab_during_a_run_then_a_new_tab_gets_the_run(tmp_path: Path) -> None:
    task = "Run the long job in a tab I close"
    with app_in_a_browser(tmp_path, GATED_RUN) as (url, data, context):
        page = new_tab(context, url)
        send(page, task)
        wait_for_text(page, "open('go.txt')")
        page.close()

        page = new_tab(context, url)
        wait_for_text(page, task, where="#chat-list")
        page.locator("#chat-list").get_by_text(task).click()  # open the chat from the side list
        wait_for_text(page, task)
        wait_for_text(page, "open('go.txt')")
        release_gate(data)
        check_finished_run(page, data, task)


def test_a_tab_already_open_takes_the_run_of_a_closed_tab_from_the_side_list(tmp_path: Path) -> None:
    """The person has a second tab open, closes the tab whose run goes on and opens the chat in the other
    one from the side list: it gets the run (not a copy from disk that a later message would save over)."""
    task = "Run the long job, I have another tab"
    with app_in_a_browser(tmp_path, GATED_RUN + [COUNTING_TURN]) as (url, data, context):
        running = new_tab(context, url)
        send(running, task)
        wait_for_text(running, "open('go.txt')")
        other = new_tab(context, url)  # opened while the run goes on in the first tab
        wait_for_text(other, task, where="#chat-list")
        running.close()

        other.locator("#chat-list").get_by_text(task).click()
        wait_for_text(other, "open('go.txt')")
        release_gate(data)
        check_finished_run(other, data, task)
