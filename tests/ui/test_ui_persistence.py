"""Saved chats reopened: resume (in-process and across a real app restart), tampered files in the UI, exports.
The on-disk store itself: tests/ui/test_chat_store.py; steps back into a chat: test_saved_chat_replay.py.

Fast tests use the store and the app's handlers in-process (replay model, the real sandbox); the restart
test starts `python app.py` twice on the same data folder and secret, and talks to it with gradio_client.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ui_testlib import Req, chat_text, code_reply, run_app, text_of, write_transcript
from ui_testlib import form as settings_form

from ui.app import AgentDeckApp
from ui.panels.exports import ChatExports
from ui.panels.history import HistoryController
from ui.saved.store import ChatStore, new_token
from ui.settings import AppConfig

SECRET = "s" * 40

SET_AND_WRITE = code_reply("Set a variable and write a file.",
                           "answer_value = 6 * 7\nopen('note.txt', 'w').write('hello from step 1')\n"
                           "print('set', answer_value)")
STAMP = code_reply("Record the time.", "import time\nstamp = time.time()\nprint('stamp', stamp)")
FINISH = code_reply("Done.", "final_answer(f'The value is {answer_value}')")
FOLLOW_UP = [code_reply("Use the variable from before.", "print('still', answer_value + 1)"),
             code_reply("Done.", "final_answer(answer_value + 1)")]


@pytest.fixture(autouse=True)
def _secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTDECK_SECRET", SECRET)


def listed(update: Any) -> tuple[Any, list[tuple[str, str]]]:
    """(selected id, [(label, id)]) of the side list's update (a gr.Radio in-process, a dict over HTTP)."""
    if isinstance(update, dict):
        return update.get("value"), [tuple(c) for c in update.get("choices") or []]
    return update.value, [tuple(c) for c in update.choices or []]


# ----- the app's handlers, in-process -----------------------------------------------------------------
class App:
    """The app's controller on a data folder (a new instance = the app after a restart)."""

    def __init__(self, tmp_path: Path, replies: list[str]) -> None:
        transcript = write_transcript(tmp_path / "script.json", replies)
        self.config = AppConfig(model=f"replay:{transcript}", data_dir=tmp_path / "data", authorized_imports=(),
                                max_steps=6)
        self.app = AgentDeckApp(self.config)
        self.history = HistoryController(self.app.services)  # the saved-chats list, as the page wires it
        self.exports = ChatExports(self.app.services)  # its export buttons

    def form(self) -> dict[str, Any]:
        return settings_form(self.config.model)

    def load(self, token: str, key: str = "tab") -> tuple:
        return list(self.history.on_load({"token": token}, Req(key), **self.form()))[-1]

    def run(self, text: str, key: str = "tab") -> tuple:
        return list(self.app.run({"text": text, "files": []}, Req(key), **self.form()))[-1]

    def close(self) -> None:
        self.app.registry.shutdown()


def test_resume_in_a_fresh_app_uses_memory_and_rebuilt_variables(tmp_path: Path) -> None:
    token = new_token()
    first = App(tmp_path, [SET_AND_WRITE, STAMP, FINISH])
    try:
        state, chat, *_ = first.load(token)
        assert state == {"token": token} and chat == []
        chat = first.run("Set a variable please")[0]
        assert "The value is 42" in chat_text(chat)
        chat_id = first.app.registry.peek("tab").record.saved.id
    finally:
        first.close()  # saved chats survive the shutdown; only unused folders go
    owner_dir = tmp_path / "data" / "owners" / ChatStore(tmp_path / "data").owner_for_token(token)
    assert (owner_dir / chat_id / "memory.json").is_file()
    assert (owner_dir / chat_id / "workspace" / "note.txt").is_file()
    meta = json.loads((owner_dir / chat_id / "meta.json").read_text())
    assert meta["title"] == "Set a variable please" and meta["steps"] == 3

    second = App(tmp_path, FOLLOW_UP)
    try:
        out = second.load(token, key="new-tab")
        chat, files, chat_list = out[1], out[3], out[6]
        text = chat_text(chat)
        assert "Set a variable please" in text and "The value is 42" in text and "set 42" in text
        assert "Chat restored" in text and "Re-ran 3 recorded code steps" in text
        # The time stamp differs; the step is named as the chat names it (its message's run, its step in it).
        assert "Step 2 of “Set a variable please” printed different output" in text
        assert any(Path(p).name == "note.txt" for p in files)
        assert listed(chat_list)[0] == chat_id and [c[1] for c in listed(chat_list)[1]] == [chat_id]
        chat = second.run("Add one to it", key="new-tab")[0]
        text = chat_text(chat)
        assert "still 43" in text and text_of(chat[-1]) == "43"
        agent = second.app.registry.peek("new-tab").agent
        # run(..., reset=False) on the restored memory
        assert [s.step_type for s in agent.memory.steps].count("task") == 2
        # Exports of the resumed chat.
        md = Path(second.exports.export_markdown(Req("new-tab")))
        markdown = md.read_text()
        for needle in ("Set a variable please", "answer_value = 6 * 7", "The value is 42", "Add one to it", "43"):
            assert needle in markdown, needle
        nb_path = Path(second.exports.export_notebook(Req("new-tab")))
        import nbformat

        notebook = nbformat.read(str(nb_path), as_version=4)
        nbformat.validate(notebook)
        code_cells = [c for c in notebook.cells if c.cell_type == "code"][1:]  # after the setup cell
        assert [c.source.splitlines()[0] for c in code_cells] == [
            "answer_value = 6 * 7", "import time", "final_answer(f'The value is {answer_value}')",
            "print('still', answer_value + 1)", "final_answer(answer_value + 1)"]
        assert code_cells[0].outputs[0]["text"] == "set 42\n"
    finally:
        second.close()


def test_the_chat_open_in_the_tab_clicked_in_the_list_stays_as_it_is(tmp_path: Path) -> None:
    """A click on the chat the tab shows (the list's chosen one, ui/web/gradio_dom.py CHOSEN_CHAT_CLICKABLE_JS
    sends it) leaves it as it is: reopened, its code would run again to rebuild variables it still has."""
    app = App(tmp_path, [SET_AND_WRITE, STAMP, FINISH])
    try:
        token = new_token()
        app.load(token)
        app.run("Set a variable please")
        session = app.app.registry.peek("tab")
        agent, chat_id = session.agent, session.record.saved.id
        views = list(app.history.open_chat({"token": token}, chat_id, Req("tab"), **app.form()))
        assert len(views) == 1 and app.app.registry.peek("tab") is session and session.agent is agent
        text = chat_text(views[0][1])
        assert "The value is 42" in text and "Chat restored" not in text and "Re-ran" not in text
        assert listed(views[0][6])[0] == chat_id
    finally:
        app.close()


@pytest.mark.parametrize("sent", [None, 12345, {"id": "x"}, ["a"], "x" * 10_000, "../../etc", "OTHER", "OPEN"])
def test_only_the_open_chat_s_own_id_skips_the_usual_open(tmp_path: Path, sent: Any,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """`open_chat`'s chat id is the visitor's (the API's value, the click's data). Only the id of the chat this
    tab continues is left as it is; any other value (another browser's chat id: "OTHER") goes the usual way,
    whose owner check refuses it. Nothing of the other browser's chat is shown."""
    app = App(tmp_path, [SET_AND_WRITE, STAMP, FINISH, SET_AND_WRITE, STAMP, FINISH])
    try:
        app.load(new_token(), key="other-browser")
        app.run("Someone else's chat", key="other-browser")
        other_id = app.app.registry.peek("other-browser").record.saved.id
        token = new_token()
        app.load(token)
        app.run("Set a variable please")
        chat_id = app.app.registry.peek("tab").record.saved.id
        value = {"OTHER": other_id, "OPEN": chat_id}.get(sent, sent) if isinstance(sent, str) else sent
        usual: list[Any] = []
        usual_open = app.history._open
        monkeypatch.setattr(app.history, "_open", lambda *args, **kw: usual.append(args[3]) or usual_open(*args, **kw))
        views = list(app.history.open_chat({"token": token}, value, Req("tab"), **app.form()))
        assert usual == ([] if sent == "OPEN" else [value])
        assert views and "Someone else" not in chat_text(views[-1][1])
    finally:
        app.close()


def test_a_chat_opened_at_once_after_new_chat_stays_current_and_checked(tmp_path: Path) -> None:
    """New chat's list refresh (`after_new_chat`) runs after New chat's own event: a chat clicked in the list at
    once may be open already. It stays this browser's current chat (a reload shows it) and checked in the list;
    before, the refresh made no chat current and checked none (found by hand, 6 of 8 at 1440 px)."""
    app = App(tmp_path, [SET_AND_WRITE, STAMP, FINISH])
    try:
        token = new_token()
        state = {"token": token}
        app.load(token)
        app.run("Set a variable please")
        chat_id = app.app.registry.peek("tab").record.saved.id
        app.app.new_chat(Req("tab"))
        list(app.history.open_chat(state, chat_id, Req("tab"), **app.form()))
        refreshed = app.history.after_new_chat(state, Req("tab"))
        owner = app.history.identify(state, Req("tab"))[0]
        assert listed(refreshed[1])[0] == chat_id and app.history.store.current(owner) == chat_id
        assert "The value is 42" in chat_text(app.load(token, key="reloaded")[1])
    finally:
        app.close()


def test_a_file_deleted_before_reopening_stays_deleted(tmp_path: Path) -> None:
    """Issue 19: reopening re-runs the code to rebuild its variables; the file that code wrote, deleted by the
    person since, must not come back on disk or in the files panel; the note says why it is not there."""
    token = new_token()
    first = App(tmp_path, [SET_AND_WRITE, STAMP, FINISH])
    try:
        first.load(token)
        first.run("Set a variable please")
        chat_id = first.app.registry.peek("tab").record.saved.id
    finally:
        first.close()
    owner_dir = tmp_path / "data" / "owners" / ChatStore(tmp_path / "data").owner_for_token(token)
    note_file = owner_dir / chat_id / "workspace" / "note.txt"
    note_file.unlink()  # what the files panel's delete does
    second = App(tmp_path, FOLLOW_UP)
    try:
        out = second.load(token, key="new-tab")
        text, files = chat_text(out[1]), out[3]
        assert "Re-ran 3 recorded code steps" in text
        assert not note_file.exists() and not any(Path(p).name == "note.txt" for p in files or [])
        assert "removed again" in text and "`note.txt`" in text
        assert text_of(second.run("Add one to it", key="new-tab")[0][-1]) == "43"  # the variables are back
    finally:
        second.close()


@pytest.mark.slow
def test_reopening_a_chat_on_a_full_server_waits_for_a_sandbox(tmp_path: Path) -> None:
    """Reopening rebuilds variables in a sandbox: it counts against the cap like a run, and on a full server
    the rebuild waits for the next message instead of taking a place nobody has."""
    token = new_token()
    first = App(tmp_path, [SET_AND_WRITE, STAMP, FINISH])
    try:
        first.load(token)
        first.run("Set a variable please")
    finally:
        first.close()
    second = App(tmp_path, FOLLOW_UP)
    second.app.registry.max_sandboxes = 1
    try:
        busy = second.app.registry.get("someone-else")
        busy.use_agent(type("Busy", (), {"interrupt": lambda self: None, "close": lambda self: None})(), None)
        busy.hibernate = lambda: False  # running code: cannot make room
        text = chat_text(second.load(token, key="new-tab")[1])
        assert "The value is 42" in text and "server is busy" in text and "Chat restored" not in text
        assert second.app.registry.peek("new-tab").agent is None
        busy.close()  # the other session ended: its sandbox is closed
        chat = second.run("Add one to it", key="new-tab")[0]
        assert "still 43" in chat_text(chat) and text_of(chat[-1]) == "43"
    finally:
        second.close()


def test_another_browser_cannot_open_the_chat_even_with_its_id(tmp_path: Path) -> None:
    token = new_token()
    app = App(tmp_path, [SET_AND_WRITE, FINISH])
    try:
        app.load(token)
        app.run("mine")
        chat_id = app.app.registry.peek("tab").record.saved.id
        intruder = new_token()
        out = app.load(intruder, key="intruder-tab")
        assert out[1] == [] and listed(out[6])[1] == []
        opened = list(app.history.open_chat({"token": intruder}, chat_id, Req("intruder-tab"), **app.form()))[-1]
        assert "mine" not in chat_text(opened[1]) and listed(opened[6])[1] == []
        renamed = app.history.rename_chat({"token": intruder}, chat_id, "stolen", Req("intruder-tab"))
        assert listed(renamed[0])[1] == []
        app.history.delete_chat({"token": intruder}, chat_id, Req("intruder-tab"))
        assert app.history.store.list(app.history.store.owner_for_token(token))[0].title == "mine"
        # The owner renames and deletes; New chat starts a fresh saved chat, and the old one stays.
        state = {"token": token}
        assert listed(app.history.rename_chat(state, chat_id, "Renamed", Req("tab"))[0])[1][0][0].startswith("Renamed")
        app.app.new_chat(Req("tab"))
        app.history.after_new_chat(state, Req("tab"))
        assert app.app.registry.peek("tab").record.saved.id != chat_id
        assert app.history.store.current(app.history.store.owner_for_token(token)) is None
        out = app.history.delete_chat(state, chat_id, Req("tab"))
        assert listed(out[6])[1] == []
        assert app.history.store.get(app.history.store.owner_for_token(token), chat_id) is None
    finally:
        app.close()


def test_tampered_chat_is_refused_in_the_ui(tmp_path: Path) -> None:
    token = new_token()
    app = App(tmp_path, [SET_AND_WRITE, FINISH])
    try:
        app.load(token)
        app.run("keep this")
        saved = app.app.registry.peek("tab").record.saved
        data = saved.memory_path.read_text()
        saved.memory_path.write_text(data.replace("keep this", "changed!!"))
        out = app.load(token, key="other-tab")
        text = chat_text(out[1])
        assert "Could not open the saved chat" in text and "signature does not match" in text
        assert "answer_value" not in text  # nothing of it was loaded
        session = app.app.registry.peek("other-tab")
        assert session.agent is None and session.record.saved.id != saved.id and saved.memory_path.exists()
    finally:
        app.close()


def test_reaper_keeps_saved_chats_and_drops_unused_ones(tmp_path: Path) -> None:
    token = new_token()
    app = App(tmp_path, [SET_AND_WRITE, FINISH])
    try:
        app.load(token)
        app.run("keep me")
        kept = app.app.registry.peek("tab").record.saved
        app.load(new_token(), key="idle-tab")
        unused = app.app.registry.peek("idle-tab").record.saved
        app.app.registry.close("tab")
        app.app.registry.close("idle-tab")
        app.app.registry.grace_s = 0
        app.app.registry.reap()
        assert kept.folder.exists() and (kept.workspace / "note.txt").exists()
        assert not unused.folder.exists()
    finally:
        app.close()


# ----- a real restart ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_resume_after_restarting_the_app_process(tmp_path: Path) -> None:
    from gradio_client import Client

    transcript = write_transcript(tmp_path / "script.json", [SET_AND_WRITE, FINISH])
    data = tmp_path / "data"
    data.mkdir()
    env = {"AGENTDECK_SECRET": SECRET}
    token = new_token()
    with run_app(transcript, data, extra_env=env) as url:
        client = Client(url, verbose=False, download_files=False)
        client.predict({"token": token}, api_name="/browser_session")
        chat = client.submit({"text": "Set a variable please", "files": []}, api_name="/run").result(timeout=60)[0]
        assert "The value is 42" in chat_text(chat)
    write_transcript(transcript, FOLLOW_UP)  # the restarted app's model answers the follow-up
    with run_app(transcript, data, extra_env=env) as url:
        client = Client(url, verbose=False, download_files=False)
        out = client.submit({"token": token}, api_name="/browser_session").result(timeout=60)
        text = chat_text(out[1])
        assert "Set a variable please" in text and "The value is 42" in text and "Re-ran 2 recorded code steps" in text
        assert any(Path(f["path"]).name == "note.txt" for f in out[3] or [])
        chat = client.submit({"text": "Add one", "files": []}, api_name="/run").result(timeout=60)[0]
        assert "still 43" in chat_text(chat) and text_of(chat[-1]) == "43"
        # Another browser sees nothing, even with the chat's id.
        chat_id = listed(out[6])[0]
        other = Client(url, verbose=False, download_files=False)
        out = other.submit({"token": new_token()}, api_name="/browser_session").result(timeout=60)
        assert listed(out[6])[1] == []
        from gradio_client.exceptions import AppError

        try:  # the side list of this browser does not offer the id, so Gradio refuses it before the handler
            opened = other.submit({"token": new_token()}, chat_id, api_name="/open_chat").result(timeout=60)
        except AppError as exc:
            assert "not in the list of choices" in str(exc)
        else:
            assert "Set a variable" not in chat_text(opened[1])
