"""Retry and Edit-and-resend (issue 19), in-process with replay models: the conversation is rewound to before
the last message (memory, chat, variables rebuilt, saved at once), then that message, or its edited text, runs
again. Refusals leave everything as it was and say why."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr
import pytest
from nothing_lost_harness import SET_X, LiveApp, Req, StallingModel, chat_text, code_reply, wait_until
from ui_testlib import form as settings_form
from ui_testlib import write_transcript

from agents.memory import AgentMemory, TaskStep
from ui.app import AgentDeckApp
from ui.panels.retry import RetryHandlers
from ui.saved.store import ChatStore, new_token
from ui.session.rewind import last_turn_start
from ui.settings import AppConfig

SET_Y = code_reply("Set another one.", "y = 7\nfinal_answer('old answer')")
#: What the resent message's run reports: whether `y` (set by the undone answer) and `x` (set before) exist.
CHECK = code_reply("Look at the variables.", "try:\n    y\n    seen = 'y survived'\nexcept NameError:\n"
                                             "    seen = 'y is gone'\nfinal_answer(f'new answer: {seen}, x = {x}')")
NEW_ANSWER = "new answer: y is gone, x = 41"


@pytest.fixture(autouse=True)
def _secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTDECK_SECRET", "t" * 40)


class Tab:
    """One tab of a LiveApp, with the retry handlers the layout wires."""

    def __init__(self, live: LiveApp, key: str = "tab", token: str | None = None) -> None:
        self.live, self.key, self.token = live, key, token or new_token()
        self.handlers = RetryHandlers(live.app.services)
        live.load(self.token, key=key)

    def send(self, text: str) -> list[tuple]:
        return self.live.run(text, key=self.key)

    def retry(self, form: dict[str, Any] | None = None) -> list[tuple]:
        return list(self.handlers.retry(None, Req(self.key), **(form or self.live.form())))

    def edit(self, text: str) -> list[tuple]:
        return list(self.handlers.edit_resend(text, None, Req(self.key), **self.live.form()))

    @property
    def session(self):
        return self.live.session(self.key)

    def chat(self) -> str:
        return chat_text(self.session.record.transcript.messages())

    def user_texts(self) -> list[str]:
        return [m["content"] for m in self.session.record.transcript.messages()
                if m["role"] == "user" and isinstance(m["content"], str)]

    def saved(self) -> tuple[AgentMemory, dict]:
        memory, metadata = ChatStore(self.live.config.data_dir).load_memory(self.session.record.saved)
        return memory, metadata


def final_answers(memory: AgentMemory) -> list:
    return [s.output for s in memory.steps if s.step_type == "final_answer"]


@pytest.mark.slow
def test_retry_gives_a_new_answer_in_place_of_the_old_with_the_variables_from_before(tmp_path: Path) -> None:
    live = LiveApp(tmp_path, StallingModel([code_reply("Set it.", "x = 41\nfinal_answer('x is set')"), SET_Y, CHECK]))
    try:
        tab = Tab(live)
        tab.send("Set x")
        tab.send("Set y")
        assert "old answer" in tab.chat()
        tab.retry()
        chat = tab.chat()
        assert NEW_ANSWER in chat and "old answer" not in chat  # y, set by the undone answer, is gone; x is there
        assert tab.user_texts() == ["Set x", "Set y"]  # the message once, where it was
        assert "Rewound to before your last message" in chat and "Re-ran 1 recorded code step" in chat
        memory = tab.session.agent.memory
        turns = tab.session.record.turns
        assert [s.task for s in memory.steps if isinstance(s, TaskStep)] == [t["task"] for t in turns]
        assert final_answers(memory) == ["x is set", NEW_ANSWER]
        saved, metadata = tab.saved()  # the saved chat is the rewound one, with the new answer
        assert final_answers(saved) == ["x is set", NEW_ANSWER]
        assert [t["text"] for t in metadata["turns"]] == ["Set x", "Set y"]
    finally:
        live.close()


def test_edit_and_resend_runs_the_edited_message_from_before_the_old_one(tmp_path: Path) -> None:
    live = LiveApp(tmp_path, StallingModel([code_reply("Set it.", "x = 41\nfinal_answer('x is set')"), SET_Y, CHECK]))
    try:
        tab = Tab(live)
        tab.send("Set x")
        tab.send("Set y")
        tab.edit("What is defined now?")
        chat = tab.chat()
        assert tab.user_texts() == ["Set x", "What is defined now?"]
        assert NEW_ANSWER in chat and "old answer" not in chat and "Set y" not in chat
        assert "What is defined now?" in str(live.model.calls[-1][-1]["content"])  # the model got the edited text
        saved, metadata = tab.saved()
        assert [t["text"] for t in metadata["turns"]] == ["Set x", "What is defined now?"]
        assert final_answers(saved) == ["x is set", NEW_ANSWER]
        assert not any("Set y" in s.task for s in saved.steps if isinstance(s, TaskStep))
    finally:
        live.close()


def test_retrying_the_first_message_starts_from_an_empty_memory_and_saves_that(tmp_path: Path) -> None:
    live = LiveApp(tmp_path, StallingModel([SET_Y, CHECK.replace(", x = {x}", "")]))
    try:
        tab = Tab(live)
        tab.send("Set y")
        tab.retry()
        chat = tab.chat()
        assert "new answer: y is gone" in chat and "old answer" not in chat
        assert "starts again from an empty memory" in chat
        saved, metadata = tab.saved()
        assert final_answers(saved) == ["new answer: y is gone"] and len(metadata["turns"]) == 1
    finally:
        live.close()


def test_the_rewound_chat_is_saved_even_when_the_resent_run_fails(tmp_path: Path) -> None:
    live = LiveApp(tmp_path, StallingModel([SET_X, code_reply("Answer.", "final_answer('old answer')")]))
    try:
        tab = Tab(live)
        tab.send("Set x")
        tab.retry()  # the script has no reply left: the resent run fails at its first model call
        assert "Run failed" in tab.chat() and "old answer" not in tab.chat()
        saved, metadata = tab.saved()
        assert "old answer" not in final_answers(saved) and [t["text"] for t in metadata["turns"]] == ["Set x"]
        assert sum(isinstance(s, TaskStep) for s in saved.steps) == 1  # the resent message's own, not the old one
    finally:
        live.close()


def test_uploads_of_the_message_stay_and_go_with_it_again(tmp_path: Path) -> None:
    table = tmp_path / "sales.csv"
    table.write_text("region,amount\nnorth,3\nsouth,5\n")
    live = LiveApp(tmp_path, StallingModel([
        code_reply("Read it.", "import csv\nrows = list(csv.DictReader(open('sales.csv')))\nfinal_answer(len(rows))"),
        code_reply("Read it again.", "import csv\nfinal_answer(sum(int(r['amount']) for r in "
                                     "csv.DictReader(open('sales.csv'))))")]))
    try:
        tab = Tab(live)
        list(live.app.run({"text": "How many rows?", "files": [{"path": str(table), "orig_name": "sales.csv"}]},
                          Req(tab.key), **live.form()))
        tab.edit("What is the total amount?")
        session = tab.session
        assert "8" in tab.chat() and (session.record.workspace / "sales.csv").is_file()
        assert [r.safe_name for r in session.record.uploads] == ["sales.csv"]
        task = str(live.model.calls[-1][-1]["content"])
        assert "What is the total amount?" in task and "sales.csv" in task and "region" in task  # preview again
        assert any(isinstance(m["content"], dict) and m["role"] == "user" for m in session.record.transcript.messages())
        _, metadata = tab.saved()
        assert [u["name"] for u in metadata["turns"][-1]["uploads"]] == ["sales.csv"]
    finally:
        live.close()


def test_files_the_undone_answer_wrote_are_named_and_kept(tmp_path: Path) -> None:
    live = LiveApp(tmp_path, StallingModel([
        code_reply("Write it.", "open('notes.txt', 'w').write('draft')\nfinal_answer('written')"),
        code_reply("Again.", "final_answer(open('notes.txt').read())")]))
    try:
        tab = Tab(live)
        tab.send("Write notes")
        tab.retry()
        chat = tab.chat()
        assert "Files the undone answer wrote stay in the workspace: `notes.txt`" in chat
        assert "draft" in chat  # the retried run found the file
    finally:
        live.close()


def test_nothing_to_retry_and_a_running_chat_are_refused_with_nothing_changed(tmp_path: Path) -> None:
    live = LiveApp(tmp_path, StallingModel([code_reply("Set it.", "x = 41\nfinal_answer('x is set')"),
                                            code_reply("Slow.", "final_answer('late')")], stall_at=(1,)))
    try:
        tab = Tab(live)
        tab.retry()
        assert "Nothing was retried**: There is no message to retry yet" in tab.chat()
        tab.edit("anything")
        assert "Your edited message was not sent** (it is still in the edit box): There is no message to edit" \
            in tab.chat()
        assert tab.handlers.reopen_if_unsent(Req(tab.key)).visible is True  # the edit box comes back
        tab.send("Set x")
        thread, _ = live.run_in_thread("Answer slowly", key=tab.key)
        wait_until(lambda: live.model.stalled[1].is_set(), what="the second run to wait for its model")
        # While the run goes on the refusal is a warning on the page: a note in the chat would land inside the
        # running step (its later output under the note, the step split for good).
        with pytest.warns(UserWarning, match="Nothing was retried: A run is going"):
            updates = tab.retry()
        assert updates == [(gr.skip(),) * 5]  # the run's own event goes on showing the chat
        with pytest.warns(UserWarning, match="A run is going: wait for it to end \\(or press Stop\\), then edit"):
            assert tab.handlers.open_editor(Req(tab.key)) == (gr.skip(), gr.skip())  # Edit: the same refusal
        assert "A run is going" not in tab.chat()  # no note in the chat
        assert [t["text"] for t in tab.session.record.turns] == ["Set x", "Answer slowly"]
        live.model.release()
        thread.join(30)
        assert "late" in tab.chat()
    finally:
        live.close()


def test_an_empty_edit_is_refused(tmp_path: Path) -> None:
    live = LiveApp(tmp_path, StallingModel([SET_X]))
    try:
        tab = Tab(live)
        tab.send("Set x")
        tab.edit("   ")
        assert "the message is empty" in tab.chat() and [t["text"] for t in tab.session.record.turns] == ["Set x"]
    finally:
        live.close()


def test_a_new_agent_that_cannot_start_changes_nothing(tmp_path: Path) -> None:
    live = LiveApp(tmp_path, StallingModel([code_reply("Set it.", "x = 41\nfinal_answer('x is set')"),
                                            code_reply("Answer.", "final_answer('old answer')"),
                                            code_reply("Answer.", "final_answer(x + 1)")]))
    built = live.app.registry.agent_factory

    def factory(settings, workdir):
        if settings.agent_type == "tool-calling":
            raise RuntimeError("no such model here")
        return built(settings, workdir)

    live.app.registry.agent_factory = factory
    try:
        tab = Tab(live)
        tab.send("Set x")
        tab.send("Add one")
        agent = tab.session.agent
        # Another agent type needs a new agent (a run-level setting would not: it goes to the run): it fails.
        tab.retry(form=settings_form(live.config.model, agent_type="tool-calling"))
        chat = tab.chat()
        assert "Nothing was retried**: Could not start the agent (RuntimeError: no such model here). Nothing was " \
               "changed." in chat and "Rewinding" not in chat and "old answer" in chat
        assert tab.session.agent is agent and final_answers(agent.memory) == ["x is set", "old answer"]
        assert [t["text"] for t in tab.session.record.turns] == ["Set x", "Add one"]
        tab.retry()  # with the agent's own settings it works
        assert "42" in tab.chat() and "old answer" not in tab.chat()
    finally:
        live.close()


@pytest.mark.slow
def test_retry_respects_the_tab_that_holds_the_chat(tmp_path: Path) -> None:
    live = LiveApp(tmp_path, StallingModel([code_reply("Set it.", "x = 41\nfinal_answer('x is set')"), SET_Y, CHECK]))
    try:
        token = new_token()
        a = Tab(live, "A", token)
        a.send("Set x")
        a.send("Set y")
        b = Tab(live, "B", token)  # the same browser's second tab opens the chat: it holds it now
        a.retry()
        assert "Nothing was retried**: this chat is open in another tab" in a.chat()
        assert live.history.refresh({"token": token}, Req("A"))[2].visible  # Take over here is offered
        b.retry()
        assert NEW_ANSWER in b.chat()
        taken = list(live.history.take_over({"token": token}, Req("A"), **live.form()))[-1]
        shown = chat_text(taken[1])
        assert NEW_ANSWER in shown and "old answer" not in shown  # A loads the rewound chat from disk
    finally:
        live.close()


def test_the_app_factory_keeps_the_agent_and_its_model_and_rebuilds_once(tmp_path: Path) -> None:
    replies = [code_reply("Set it.", "x = 41\nfinal_answer('x is set')"), SET_Y, CHECK]
    script = write_transcript(tmp_path / "script.json", replies)
    other = write_transcript(tmp_path / "other.json", replies)  # another model (the same script): a new agent
    config = AppConfig(model=f"replay:{script}", data_dir=tmp_path / "data", authorized_imports=(), max_steps=4,
                       free_choice=True)
    app = AgentDeckApp(config)
    handlers, req = RetryHandlers(app.services), Req("tab")
    form = settings_form(config.model, max_steps=4)
    try:
        for text in ("Set x", "Set y"):
            list(app.run({"text": text, "files": []}, req, **form))
        session = app.session_for(req)
        agent = session.agent
        list(handlers.retry(None, req, **form))
        assert session.agent is agent  # same settings: same agent, its model's next reply is the new answer
        assert NEW_ANSWER in chat_text(session.record.transcript.messages())
        list(handlers.retry(None, req, **settings_form(config.model, max_steps=3)))  # a run-level change: same agent
        assert session.agent is agent
        list(handlers.retry(None, req, **settings_form(f"replay:{other}", max_steps=3)))  # a new model: a new agent
        text = chat_text(session.record.transcript.messages())
        assert session.agent is not agent and NEW_ANSWER not in text
        assert final_answers(session.agent.memory) == ["x is set", "x is set"]  # its own script, from reply 1
        assert text.count("Re-ran 1 recorded code step") == 1 and "Settings changed" not in text  # rebuilt once
    finally:
        app.registry.shutdown()


def test_last_turn_start_finds_the_last_message_s_task_step() -> None:
    memory = AgentMemory("system")
    for task in ("a", "b", "a"):
        memory.add_step(TaskStep(task=task))
    turns = [{"task": "a"}, {"task": "b"}, {"task": "a"}]
    assert last_turn_start(memory, turns) == 2
    assert last_turn_start(memory, [*turns, {"task": "c"}]) is None  # the last message left no step
    assert last_turn_start(memory, []) is None and last_turn_start(None, turns) is None


def test_a_chat_whose_sandbox_was_closed_to_make_room_is_rewound_with_a_new_agent(tmp_path: Path) -> None:
    live = LiveApp(tmp_path, StallingModel([code_reply("Set it.", "x = 41\nfinal_answer('x is set')"), SET_Y, CHECK]))
    try:
        tab = Tab(live)
        tab.send("Set x")
        tab.send("Set y")
        assert tab.session.hibernate()  # idle: its agent and sandbox closed, its memory kept for the next message
        tab.retry()
        chat = tab.chat()
        assert NEW_ANSWER in chat and "old answer" not in chat and "Sandbox restarted" not in chat
        assert tab.session.holds_sandbox and final_answers(tab.session.memory) == ["x is set", NEW_ANSWER]
    finally:
        live.close()
