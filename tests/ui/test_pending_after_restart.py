"""A decision pending when the server stops is saved with the chat: the app started again on the same data
folder shows it when the chat is reopened, and answering it resumes the run (issues 28 and 31)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ui_testlib import Req, chat_text, code_reply, write_transcript
from ui_testlib import form as settings_form

from ui.app import AgentDeckApp
from ui.panels.approval_panel import VIEW_KEYS
from ui.panels.approvals import ApprovalHandlers
from ui.panels.history import HistoryController
from ui.saved.store import new_token
from ui.settings import AppConfig

CODE = "value = 6 * 7\nprint('ran after the restart')\nfinal_answer(f'value {value}')"
SCRIPT = [code_reply("Set and finish.", CODE)]


class App:
    """The app's controllers on a data folder (a second instance = the app after a restart)."""

    def __init__(self, tmp_path: Path) -> None:
        transcript = write_transcript(tmp_path / "script.json", SCRIPT)
        self.config = AppConfig(model=f"replay:{transcript}", data_dir=tmp_path / "data", authorized_imports=(),
                                max_steps=6)
        self.app = AgentDeckApp(self.config)
        self.history = HistoryController(self.app.services)
        self.approvals = ApprovalHandlers(self.app.services)

    def form(self) -> dict[str, Any]:
        return settings_form(self.config.model)

    def view(self, key: str) -> dict[str, Any]:
        return dict(zip(VIEW_KEYS, self.approvals.refresh(None, Req(key)), strict=True))


def _visible(update: Any) -> bool:
    return isinstance(update, dict) and update.get("visible") is True


def test_a_decision_pending_at_a_restart_is_shown_and_resumes_the_run(tmp_path: Path) -> None:
    token = new_token()
    first = App(tmp_path)
    try:
        list(first.history.on_load({"token": token}, Req("tab"), **first.form()))
        list(first.app.run({"text": "Compute it", "files": []}, Req("tab"), "approve_code", **first.form()))
        assert _visible(first.view("tab")["card"])
        chat_id = first.app.registry.peek("tab").record.saved.id
        # The first server is gone without answering (its waiting thread is never woken): a new one starts.
        second = App(tmp_path)
        try:
            list(second.history.on_load({"token": token}, Req("tab2"), **second.form()))
            list(second.history.open_chat({"token": token}, chat_id, Req("tab2"), **second.form()))
            view = second.view("tab2")
            assert _visible(view["card"]) and "ran after the restart" in str(view["edit_code"])
            shown = view["request_id"]
            answered = dict(zip(VIEW_KEYS, second.approvals.approve(shown, CODE, "", Req("tab2")), strict=True))
            assert not _visible(answered["panel"]), answered
            list(second.approvals.resume(Req("tab2")))
            session = second.app.registry.peek("tab2")
            transcript = session.record.transcript
            assert transcript.finished is not None, chat_text(transcript.messages())
            assert transcript.finished.output == "value 42"
            assert "ran after the restart" in chat_text(transcript.messages())
            assert not _visible(second.view("tab2")["panel"])
            assert session.agent.memory.pending is None
        finally:
            second.app.registry.shutdown()
    finally:
        first.app.registry.shutdown()
