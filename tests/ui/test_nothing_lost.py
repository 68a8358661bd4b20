"""Nothing lost (issue 17), in-process: Stop in every phase keeps the conversation and its variables, the
person's message and each finished step are on disk at once, a failed save is shown at once and keeps the
older save. The app's handlers run with the real sandbox and a replay model that can stall like a provider
that never answers (tests/ui/nothing_lost_harness.py)."""
from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import gradio as gr
import pytest
from nothing_lost_harness import (
    ANSWER,
    SET_X,
    SLOW,
    LiveApp,
    Req,
    StallingModel,
    chat_text,
    noting_load_waits,
    text_of,
    wait_until,
)
from ui_testlib import code_reply

from agents.memory import ActionStep
from ui.saved.restore import UNFINISHED_NOTE
from ui.saved.store import ChatStore, new_token
from ui.session import run_stream
from ui.session.stopping import CLOSED_NOTE


@pytest.fixture(autouse=True)
def _secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTDECK_SECRET", "n" * 40)


@pytest.fixture
def apps():
    made: list[LiveApp] = []
    yield made
    for app in made:
        app.close()


def start(apps: list, tmp_path: Path, replies: list[str], stall_at: tuple[int, ...] = (), token: str | None = None,
          name: str = "script.json") -> tuple[LiveApp, str]:
    app = LiveApp(tmp_path, StallingModel(replies, stall_at), name=name)
    apps.append(app)
    token = token or new_token()
    app.load(token)
    return app, token


def saved(app: LiveApp, key: str = "tab"):
    """(memory, metadata) of the tab's chat as it is on disk now."""
    chat = app.session(key).record.saved
    return ChatStore(app.config.data_dir).load_memory(chat)


def step_types(memory) -> list[str]:
    return [s.step_type for s in memory.steps]


def last_chat(updates: list[tuple]) -> str:
    return chat_text(updates[-1][0])


# ----- Stop ------------------------------------------------------------------------------------------
def test_stop_during_code_keeps_memory_and_the_same_variables(apps, tmp_path: Path) -> None:
    app, _ = start(apps, tmp_path, [SET_X, SLOW, ANSWER])
    thread, updates = app.run_in_thread("Set x, then wait")
    wait_until(lambda: "sleeping" in chat_text(app.session().record.transcript.messages()), what="the slow code")
    agent = app.session().agent
    app.app.stop(Req("tab"))
    thread.join(30)
    assert not thread.is_alive()
    session = app.session()
    assert session.record.transcript.finished.state == "interrupted" and "Stopped" in last_chat(updates)
    assert session.agent is agent  # the loop confirms (at once, or in the background): same agent and sandbox
    # On disk: the stopped step too, once the agent recorded it (at once, or when it confirms the stop).
    wait_until(lambda: step_types(saved(app)[0]) == ["task", "action", "action"], what="the stopped step on disk")
    memory, metadata = saved(app)
    assert "stopped" in memory.steps[-1].error
    assert [t["text"] for t in metadata["turns"]] == ["Set x, then wait"]
    chat = app.run("Now use x")[-1][0]
    assert text_of(chat[-1]) == "42" and app.session().agent is agent


class _ReaderInTheLoopThread:
    """The model read in the agent's own thread, as before agents/loop/model_reader.py: a hang there is an
    agent that cannot confirm a stop (as a tool or callback deaf to Stop would be)."""

    def __init__(self, make_stream, name: str = "") -> None:
        self.make_stream = make_stream

    def deltas(self, should_stop):
        yield from self.make_stream()

    def close(self) -> None:
        pass


def test_an_agent_that_cannot_confirm_a_stop_is_replaced_and_its_memory_kept(apps, tmp_path: Path,
                                                                             monkeypatch) -> None:
    import agents.loop.model_call as model_call

    monkeypatch.setattr(model_call, "ModelStreamReader", _ReaderInTheLoopThread)
    monkeypatch.setattr(run_stream, "STOP_GRACE_S", 0.1)  # the chat gives up on the stop after this (0.6 s in the app)
    # Call 0 sets x (step 1); call 1 (step 2) hangs and ignores the interrupt; the next agent gets ANSWER.
    app, token = start(apps, tmp_path, [SET_X, ANSWER], stall_at=(1,))
    thread, updates = app.run_in_thread("Set x, then think")
    wait_until(app.model.stalled[1].is_set, what="the stalled model call")
    session = app.session()
    session.stop_settler.wait_s = 0.2  # the next message waits this long for the stopped agent (3 s in the app)
    app.app.stop(Req("tab"))
    thread.join(30)
    assert not thread.is_alive() and not app.model.gates[1].is_set()  # ended while the model still hangs
    assert "Stopped" in last_chat(updates) and not session.running and session.stop_settler.settling
    memory, _ = saved(app)  # the steps so far are on disk at once
    assert step_types(memory) == ["task", "action"] and "x = 41" in memory.steps[1].code

    chat = app.run("Now use x")[-1][0]  # the stopped agent never confirms: it is replaced, its memory kept
    text = chat_text(chat)
    assert CLOSED_NOTE in text and "Continuing after the stop" in text and "Re-ran 1 recorded code step" in text
    assert text_of(chat[-1]) == "42"  # the variable of the stopped run, rebuilt in the new sandbox
    memory, _ = saved(app)
    assert step_types(memory) == ["task", "action", "task", "action", "final_answer"]

    # Reopened after a restart, both turns are there in order.
    again = LiveApp(tmp_path, StallingModel([ANSWER]), name="again.json")
    apps.append(again)
    text = chat_text(again.load(token, key="tab-2")[1])
    assert text.index("Set x, then think") < text.index("x is set") < text.index("Now use x") < text.index("42")


def test_stop_while_waiting_for_a_decision_keeps_memory(apps, tmp_path: Path) -> None:
    set_and_answer = code_reply("Set it.", "x = 41\nfinal_answer('set')")
    app, _ = start(apps, tmp_path, [set_and_answer, code_reply("Risky.", "print('should not run')"), ANSWER])
    app.run("Set x")
    agent = app.session().agent
    app.run("Try something risky", mode="approve_code")
    session = app.session()
    # The run ended at the decision (pause mode): nothing runs, the decision waits in its memory.
    assert session.run.waiting_decision is not None and not session.running and session.has_pending()
    app.app.stop(Req("tab"))
    from ui.panels.approvals import ApprovalHandlers

    list(ApprovalHandlers(app.app.services).resume(Req("tab")))  # the page chains this after Stop
    assert session.record.transcript.finished.state == "interrupted" and not session.running
    assert "should not run\n" not in chat_text(session.record.transcript.messages())
    memory, metadata = saved(app)
    assert [t["text"] for t in metadata["turns"]] == ["Set x", "Try something risky"]
    assert step_types(memory)[:2] == ["task", "action"] and step_types(memory).count("task") == 2
    chat = app.run("Now use x", mode="autonomous")[-1][0]
    assert text_of(chat[-1]) == "42" and app.session().agent is agent


# ----- saved when sent, saved per step ----------------------------------------------------------------
def test_each_finished_step_is_on_disk_while_the_run_goes_on(apps, tmp_path: Path) -> None:
    app, token = start(apps, tmp_path, [SET_X, ANSWER], stall_at=(1,))
    thread, _ = app.run_in_thread("Set x and keep going")
    wait_until(app.model.stalled[1].is_set, what="step 2's model call")
    memory, metadata = saved(app)  # the run is still going: step 1 is on disk already
    assert step_types(memory) == ["task", "action"] and isinstance(memory.steps[1], ActionStep)
    assert memory.steps[1].logs.strip() == "x is set"
    assert [t["text"] for t in metadata["turns"]] == ["Set x and keep going"]

    # The server stops here (its memory is gone); the restarted app shows the message and the finished step.
    restarted = LiveApp(tmp_path, StallingModel([ANSWER]), name="restarted.json")
    apps.append(restarted)
    text = chat_text(restarted.load(token, key="tab-2")[1])
    assert "Set x and keep going" in text and "x is set" in text and "Re-ran 1 recorded code step" in text
    assert text_of(restarted.run("Use x", key="tab-2")[-1][0][-1]) == "42"


def test_a_first_run_cut_short_reopens_with_the_message(apps, tmp_path: Path) -> None:
    app, token = start(apps, tmp_path, [SET_X], stall_at=(0,))
    app.run_in_thread("My very first question")
    wait_until(app.model.stalled[0].is_set, what="the first model call")
    memory, metadata = saved(app)
    assert step_types(memory) in ([], ["task"])  # nothing finished yet
    assert [t["text"] for t in metadata["turns"]] == ["My very first question"]

    restarted = LiveApp(tmp_path, StallingModel([SET_X, ANSWER]), name="restarted.json")
    apps.append(restarted)
    text = chat_text(restarted.load(token, key="tab-2")[1])
    assert "My very first question" in text and UNFINISHED_NOTE in text and "no saved steps" not in text
    restarted.run("Set x please", key="tab-2")
    text = chat_text(restarted.load(token, key="tab-3")[1])  # reopened again: both messages, in order
    assert text.index("My very first question") < text.index(UNFINISHED_NOTE) < text.index("Set x please")


# ----- a failed save ----------------------------------------------------------------------------------
def test_a_full_disk_is_shown_at_once_and_keeps_the_older_save(apps, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    app, _ = start(apps, tmp_path, [SET_X, ANSWER, code_reply("Again.", "final_answer(x + 2)")])
    app.run("Set x")
    folder = app.session().record.saved.folder
    before = (folder / "memory.json").read_bytes()
    real_fsync = os.fsync

    def full_disk(fd: int) -> None:  # a disk that is full when the data reach it
        if os.readlink(f"/proc/self/fd/{fd}").startswith(str(folder)):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", full_disk)
    updates = app.run("Use x")
    first_failure = next(i for i, u in enumerate(updates) if "Could not save this chat" in chat_text(u[0]))
    assert first_failure < len(updates) - 1 or "42" in last_chat(updates)  # shown with the step, not next time
    text = last_chat(updates)
    assert text.count("Could not save this chat") == 1 and "No space left on device" in text
    assert str(folder) not in text  # no server path
    assert (folder / "memory.json").read_bytes() == before  # the older save is intact
    assert not [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]  # no temporary file left

    monkeypatch.setattr(os, "fsync", real_fsync)
    text = last_chat(app.run("Once more"))
    assert "Saved again" in text
    memory, _ = saved(app)
    assert step_types(memory).count("task") == 3


def test_a_message_sent_before_the_page_load_is_saved_in_the_chat(apps, tmp_path: Path) -> None:
    """On a busy server the page's first message can reach the app before its load has identified the
    browser: the message waits for the load, and its run is the browser's saved chat (not a session that is
    never saved, missing from the side list)."""
    app = LiveApp(tmp_path, StallingModel([code_reply("Answer.", "final_answer(42)")]))
    apps.append(app)
    owners = app.app.services.owners
    waiting = noting_load_waits(owners)
    from_page = gr.EventData(target=object(), _data={})  # a page's event names its component; API calls none
    updates: list = []
    sending = threading.Thread(target=lambda: updates.extend(
        app.app.run({"text": "Answer me", "files": []}, Req("tab"), None, None, from_page, **app.form())), daemon=True)
    sending.start()
    wait_until(waiting.is_set, what="the message waiting for the page load")
    token = new_token()
    app.load(token)  # the page's load arrives after the message
    sending.join(60)
    session = app.session("tab")
    assert text_of(updates[-1][0][-1]) == "42" and session.record.saved is not None and session.record.saved.kept
    store = ChatStore(app.config.data_dir)
    assert [m.title for m in store.list(store.owner_for_token(token))] == ["Answer me"]
    _, metadata = store.load_memory(session.record.saved)
    assert [t["text"] for t in metadata["turns"]] == ["Answer me"]
