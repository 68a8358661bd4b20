"""New chat clicked the moment a run's answer shows: the chat left behind is saved with that answer.

The drain shows a run's end first and saves it after (ui/session/run_stream.py); a New chat clicked in between
emptied the session's record before that save, and the chat reopened later said its run "ended before it finished
a step", its answer lost (2 of 4 loaded runs of test_chat_list_browser.py).
"""
from __future__ import annotations

import threading
from pathlib import Path

from ui_testlib import Req, code_reply, write_transcript
from ui_testlib import form as settings_form

from agents.memory import FinalAnswerStep
from ui.app import AgentDeckApp
from ui.panels.history import HistoryController
from ui.saved.store import new_token
from ui.settings import AppConfig


def test_new_chat_right_after_the_answer_shows_keeps_the_answer_in_the_saved_chat(tmp_path: Path) -> None:
    transcript = write_transcript(tmp_path / "script.json", [code_reply("Answer.", "final_answer(6 * 7)")])
    config = AppConfig(model=f"replay:{transcript}", data_dir=tmp_path / "data", authorized_imports=(), max_steps=3,
                       runs_per_minute=10_000, runs_at_once=10_000)
    app = AgentDeckApp(config)
    req = Req("tab")
    try:
        list(HistoryController(app.services).on_load({"token": new_token()}, req, **settings_form(config.model)))
        session = app.session_for(req)
        updates = app.run({"text": "What is six times seven?", "files": []}, req, "autonomous",
                          **settings_form(config.model))
        for _ in updates:  # up to the update that shows the answer: its save comes when the page asks for more
            run = session._runs.run
            if session.record.transcript.finished is not None and run is not None and not run.end_saved.is_set():
                break
        else:
            raise AssertionError("the run ended without an update showing its answer before its save")
        chat = session.record.saved
        clicked = threading.Thread(target=app.new_chat, args=(req,), name="new-chat")
        clicked.start()
        clicked.join(timeout=2.0)  # the time New chat had to empty the record before the save (before the fix)
        list(updates)  # the page asks for the next update: the drain saves the run's end
        clicked.join(timeout=30)
        assert not clicked.is_alive()
        memory, _ = app.services.store.load_memory(chat)
        answers = [step.output for step in memory.steps if isinstance(step, FinalAnswerStep)]
        assert answers == [42], f"the chat left behind lacks its answer: {answers}"
    finally:
        app.registry.shutdown()
