"""Restarts as an operator meets them: a chat whose list entry (meta.json) was cut short stays listed and opens;
a changed or deleted signing secret is named as such, with what to restore (not blamed on each chat's file).
The app's handlers in-process, a new app object on the same data folder standing for a restart."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from ui_testlib import Req, chat_text, code_reply, write_transcript
from ui_testlib import form as settings_form

from ui.app import AgentDeckApp
from ui.panels.history import HistoryController
from ui.saved.store import ChatStore, new_token
from ui.settings import AppConfig

ANSWER = [code_reply("Set it.", "answer_value = 6 * 7\nprint('set', answer_value)"),
          code_reply("Done.", "final_answer(f'The value is {answer_value}')")]


class App:
    """The app's controller on a data folder (a new instance = the app after a restart)."""

    def __init__(self, tmp_path: Path, replies: list[str]) -> None:
        transcript = write_transcript(tmp_path / "script.json", replies)
        self.config = AppConfig(model=f"replay:{transcript}", data_dir=tmp_path / "data", authorized_imports=(),
                                max_steps=6)
        self.app = AgentDeckApp(self.config)
        self.history = HistoryController(self.app.services)

    def load(self, token: str, key: str) -> tuple:
        return list(self.history.on_load({"token": token}, Req(key), **settings_form(self.config.model)))[-1]

    def open(self, token: str, chat_id: str, key: str) -> tuple:
        return list(self.history.open_chat({"token": token}, chat_id, Req(key), **settings_form(self.config.model)))[-1]

    def run(self, text: str, key: str) -> tuple:
        return list(self.app.run({"text": text, "files": []}, Req(key), **settings_form(self.config.model)))[-1]

    def close(self) -> None:
        self.app.registry.shutdown()


def choices(update: Any) -> list[tuple[str, str]]:
    return [tuple(c) for c in update.choices or []]


def _saved_chat(tmp_path: Path, token: str, text: str = "Compute the answer please") -> Any:
    app = App(tmp_path, ANSWER)
    try:
        app.load(token, "tab")
        assert "The value is 42" in chat_text(app.run(text, "tab")[0])
        return app.app.registry.peek("tab").record.saved
    finally:
        app.close()


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setenv("AGENTDECK_SECRET", "first-secret-" + "a" * 30)
    return monkeypatch


def test_a_truncated_list_entry_is_listed_with_a_note_and_the_chat_opens(tmp_path: Path, secret_env) -> None:
    token = new_token()
    saved = _saved_chat(tmp_path, token)
    whole = saved.meta_path.read_bytes()
    saved.meta_path.write_bytes(whole[: len(whole) // 2])  # a crash or a full disk cut it short
    app = App(tmp_path, ANSWER)
    try:
        out = app.load(token, "other-tab")
        listed = choices(out[6])
        assert [chat_id for _, chat_id in listed] == [saved.id]
        label = listed[0][0]
        assert "Compute the answer please" in label and "list entry was damaged" in label
        opened = app.open(token, saved.id, "third-tab")
        text = chat_text(opened[1])
        assert "Compute the answer please" in text and "The value is 42" in text and "does not exist" not in text
        store = app.history.store
        owner = store.owner_for_token(token)
        chat = store.get(owner, saved.id)
        store.touch(chat)  # the next message writes a whole entry again
        assert not store.list(owner)[0].damaged and store.list(owner)[0].title == "Compute the answer please"
    finally:
        app.close()


def test_a_changed_secret_is_named_with_what_to_restore(tmp_path: Path, secret_env,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    token = new_token()
    saved = _saved_chat(tmp_path, token)
    secret_env.setenv("AGENTDECK_SECRET", "second-secret-" + "b" * 30)  # rotated by the operator
    with caplog.at_level(logging.WARNING, logger="agentdeck"):
        app = App(tmp_path, ANSWER)
    try:
        assert "signing secret changed since the last start" in caplog.text
        assert "old AGENTDECK_SECRET value" in caplog.text
        text = chat_text(app.open(token, saved.id, "other-tab")[1])
        assert "Could not open the saved chat" in text
        assert "signed with another server secret" in text and "restores the previous secret" in text
        assert "the file was changed" not in text and "answer_value" not in text
    finally:
        app.close()
    secret_env.setenv("AGENTDECK_SECRET", "first-secret-" + "a" * 30)  # restored: the chat opens again
    app = App(tmp_path, ANSWER)
    try:
        text = chat_text(app.open(token, saved.id, "tab-again")[1])
        assert "The value is 42" in text and "Could not open" not in text
    finally:
        app.close()


def test_a_deleted_secret_file_is_named_at_start_and_in_the_chat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delenv("AGENTDECK_SECRET", raising=False)
    token = new_token()
    saved = _saved_chat(tmp_path, token)
    (tmp_path / "data" / "secret").unlink()  # e.g. a clean-up that took the data folder's secret with it
    with caplog.at_level(logging.WARNING, logger="agentdeck"):
        app = App(tmp_path, ANSWER)
    try:
        assert "was missing, so a new secret was made" in caplog.text or "secret changed" in caplog.text
        text = chat_text(app.open(token, saved.id, "other-tab")[1])
        assert "signed with another server secret" in text and "`secret` file" in text
    finally:
        app.close()


def test_a_changed_file_is_still_blamed_on_the_file(tmp_path: Path, secret_env) -> None:
    """Same secret, edited memory: the refusal names the file, not the secret."""
    token = new_token()
    saved = _saved_chat(tmp_path, token)
    saved.memory_path.write_text(saved.memory_path.read_text().replace("Compute the answer", "Changed the answer"))
    store = ChatStore(tmp_path / "data")
    chat = store.get(store.owner_for_token(token), saved.id)
    from ui.saved.store import ChatStoreError

    with pytest.raises(ChatStoreError, match="signature does not match.*the file was changed") as refused:
        store.load_memory(chat)
    assert "server secret" not in str(refused.value)
